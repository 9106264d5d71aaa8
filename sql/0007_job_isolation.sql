-- Background jobs fail alone (issue: hold Roost's promises against a hostile user).
--
-- 1. What the server writes on its own behalf cannot collide with what a client sends: a
--    message the server posts for someone (a missed check-in's alert) is keyed by `system_key`,
--    a column no API request can set, instead of the author's `client_msg_id`.
-- 2. A scheduled job that fails is retried later with backoff and, after a few failures,
--    parked (`parked_at`) where `roost jobs list --failed` shows it; the claims skip parked
--    rows, so a job that always fails never holds up the ones due after it.

ALTER TABLE messages
    ADD COLUMN system_key text CHECK (length(system_key) BETWEEN 1 AND 200),
    ADD CONSTRAINT messages_one_idempotency_key CHECK (system_key IS NULL OR client_msg_id IS NULL);
CREATE UNIQUE INDEX messages_system_key_key ON messages (tenant_id, group_id, system_key)
    WHERE system_key IS NOT NULL;

ALTER TABLE checkin_deadlines
    ADD COLUMN attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    ADD COLUMN last_error text CHECK (length(last_error) <= 500),
    ADD COLUMN parked_at timestamptz;
DROP INDEX checkin_deadlines_due_idx;
CREATE INDEX checkin_deadlines_due_idx ON checkin_deadlines (due_at) WHERE parked_at IS NULL;

ALTER TABLE bridge_watch
    ADD COLUMN attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    ADD COLUMN last_error text CHECK (length(last_error) <= 500),
    ADD COLUMN parked_at timestamptz;
DROP INDEX bridge_watch_due_idx;
CREATE INDEX bridge_watch_due_idx ON bridge_watch (silent_after) WHERE NOT offline AND parked_at IS NULL;

-- The outbox claims a few jobs of each tenant at a time (fairness): due jobs by tenant.
CREATE INDEX outbox_jobs_tenant_due_idx ON outbox_jobs (tenant_id, next_attempt_at);
