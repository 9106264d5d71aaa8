-- The outbox's delivery queue. Outbox rows are tenant data under forced row security, so a
-- worker cannot scan them across tenants; this table holds only ids and times (no personal
-- data, hence no row security) and is what workers claim: FOR UPDATE SKIP LOCKED, then a
-- lease, so several nodes deliver each row once and a crashed worker's lease simply expires.
CREATE TABLE outbox_jobs (
    outbox_id uuid PRIMARY KEY,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    lease_until timestamptz
);
CREATE INDEX outbox_jobs_due_idx ON outbox_jobs (next_attempt_at);
