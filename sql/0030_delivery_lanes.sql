-- Delivery lanes (issue #55): the outbox worker claims critical deliveries first, then normal,
-- then bulk, and within a lane lets tenants take turns.
--
--   0 critical: red alerts (pushes and their email or SMS fallback), escalations, check-in
--               prompts and missed-check-in alerts, verification and password-reset codes
--   1 normal:   everything else (amber alerts, answers, all clears, invitations, notices)
--   2 bulk:     chat pushes and digests
--
-- A row's lane follows from its template and its alert's severity, so it is a generated column
-- of `outbox` (every writer gets it right without naming it), copied to its job as the job is
-- queued so a claim reads `outbox_jobs` alone.
CREATE FUNCTION roost_delivery_lane(template text, data jsonb) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN template IN ('alert_escalated', 'checkin_prompt', 'checkin_alert', 'verification', 'password_reset') THEN 0
        WHEN template = 'alert' AND data->'alert'->'alert'->>'severity' = 'red' THEN 0
        WHEN template IN ('chat', 'alert_digest', 'bridge_digest') THEN 2
        ELSE 1
    END::smallint
$$;

ALTER TABLE outbox ADD COLUMN lane smallint GENERATED ALWAYS AS (roost_delivery_lane(template, data)) STORED;
ALTER TABLE outbox_jobs ADD COLUMN lane smallint NOT NULL DEFAULT 1 CHECK (lane BETWEEN 0 AND 2);

CREATE FUNCTION roost_outbox_job_lane() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    SELECT o.lane INTO NEW.lane FROM outbox o WHERE o.tenant_id = NEW.tenant_id AND o.id = NEW.outbox_id;
    NEW.lane := coalesce(NEW.lane, 1);
    RETURN NEW;
END
$$;
CREATE TRIGGER outbox_jobs_lane BEFORE INSERT ON outbox_jobs FOR EACH ROW EXECUTE FUNCTION roost_outbox_job_lane();

UPDATE outbox_jobs j SET lane = o.lane FROM outbox o WHERE o.tenant_id = j.tenant_id AND o.id = j.outbox_id;

-- A claim takes each tenant's due jobs lowest lane first.
CREATE INDEX outbox_jobs_tenant_lane_due_idx ON outbox_jobs (tenant_id, lane, next_attempt_at);

-- A gone subscription's devices are found by their endpoint.
CREATE INDEX devices_token_idx ON devices (tenant_id, token);
