-- Retention (API.md "Accounts"): a tenant's retention_days (the operator's) and a group's own,
-- shorter one (its owner's) purge a group's older events, and with them their messages,
-- alerts, answers and recipients; an open alert, and the replies to it, are kept until it closes.
-- NULL keeps everything.
ALTER TABLE tenants ADD COLUMN retention_days integer CHECK (retention_days BETWEEN 1 AND 36500);
ALTER TABLE groups ADD COLUMN retention_days integer CHECK (retention_days BETWEEN 1 AND 36500);

-- Every event at or below purged_through may be gone (only open alerts and their replies stay
-- there, as islands); a cursor below it is told to reload (`reset` on the stream, 410 over
-- REST). The purge moves it forward in the transaction that deletes, so a reader in one
-- snapshot sees both or neither.
ALTER TABLE groups ADD COLUMN purged_through bigint NOT NULL DEFAULT 0 CHECK (purged_through >= 0);

-- A group's next purge, claimed across tenants: ids and times only. A row exists while the
-- group or its tenant keeps a retention; its due time is when its oldest kept event comes of
-- age, so nothing is visited before there is something to purge.
CREATE TABLE retention_jobs (
    group_id uuid PRIMARY KEY,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    due_at timestamptz NOT NULL DEFAULT now(),
    attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error text CHECK (length(last_error) <= 500),
    parked_at timestamptz,
    FOREIGN KEY (tenant_id, group_id) REFERENCES groups (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX retention_jobs_due_idx ON retention_jobs (due_at) WHERE parked_at IS NULL;
