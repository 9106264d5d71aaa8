-- Expired sessions are swept tenant by tenant, only where one may have expired.
--
-- Sessions have row security, so a sweep could only find expired ones by visiting every tenant
-- in turn: on a deployment with thousands of tenants each node ran thousands of transactions
-- every round. `session_sweeps` holds, per tenant, a time no later than its earliest session
-- expiry (ids and a time only, no row security, like checkin_deadlines). Signing in lowers it;
-- sliding a session's expiry forward or ending one leaves it early, which is safe: the sweep
-- visits the tenant, ends what has expired and writes the true earliest expiry back.
CREATE TABLE session_sweeps (
    tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    due_at timestamptz NOT NULL
);
CREATE INDEX session_sweeps_due_idx ON session_sweeps (due_at);

-- The sweep reads a tenant's earliest expiry and its expired sessions by this index.
CREATE INDEX sessions_tenant_expires_idx ON sessions (tenant_id, expires_at);

-- Every tenant is visited once after this migration; the visit writes its true time.
INSERT INTO session_sweeps (tenant_id, due_at) SELECT id, now() FROM tenants;
