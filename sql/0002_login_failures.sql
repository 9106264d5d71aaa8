-- Failed logins, counted per identifier and per client address so that every node throttles
-- alike (API.md "Accounts": 429 after repeated failures). Keys are SHA-256 of "id:<email or
-- phone>" or "ip:<address>", so the table holds no identifier in clear. Rows older than the
-- window are deleted as new failures for the same key arrive.
CREATE TABLE login_failures (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    key_hash bytea NOT NULL CHECK (length(key_hash) = 32),
    at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX login_failures_key_idx ON login_failures (tenant_id, key_hash, at);

ALTER TABLE login_failures ENABLE ROW LEVEL SECURITY;
ALTER TABLE login_failures FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON login_failures
    USING (tenant_id = roost_current_tenant()) WITH CHECK (tenant_id = roost_current_tenant());
