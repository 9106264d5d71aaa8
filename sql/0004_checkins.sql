-- Check-ins (API.md "Check-ins (dead-man's switch)"): a member's promise to check in by a
-- deadline; if the deadline passes while the check-in is active, the server posts a red alert
-- for them, exactly once, whichever node gets there first.

CREATE TABLE checkins (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    group_id uuid NOT NULL,
    user_id uuid NOT NULL,
    status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'completed', 'missed')),
    note text NOT NULL DEFAULT '' CHECK (length(note) <= 1000),
    location jsonb,
    due_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    ended_at timestamptz,
    -- The alert a missed check-in raised (its seq in the group).
    alert_seq bigint,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, group_id) REFERENCES groups (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX checkins_tenant_user_active_idx ON checkins (tenant_id, user_id) WHERE status = 'active';

-- Row-level security for a tenant-owned table, exactly as 0001 sets it up for its tables:
-- enabled, forced (binding the owner too), one policy on roost_current_tenant(). Later
-- migrations call this instead of repeating the statements.
CREATE FUNCTION roost_protect_tenant_table(t regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_isolation ON %s USING (tenant_id = roost_current_tenant()) '
                   'WITH CHECK (tenant_id = roost_current_tenant())', t);
END
$$;

SELECT roost_protect_tenant_table('checkins');

-- The deadlines the schedulers claim: ids and times only (no personal data, hence no row
-- security), so a scheduler can find due check-ins across tenants; FOR UPDATE SKIP LOCKED lets
-- every node run one. A row lives while its check-in is active.
CREATE TABLE checkin_deadlines (
    checkin_id uuid PRIMARY KEY,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    due_at timestamptz NOT NULL
);
CREATE INDEX checkin_deadlines_due_idx ON checkin_deadlines (due_at);
