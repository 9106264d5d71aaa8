-- When each bridge with a heartbeat falls silent: ids and times only (no row security), so a
-- scheduler on any node finds silent bridges across tenants. `silent_after` moves forward with
-- every request the bridge makes; `offline` is set once two beats were missed in a row.
CREATE TABLE bridge_watch (
    bridge_id uuid PRIMARY KEY,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    silent_after timestamptz NOT NULL,
    offline boolean NOT NULL DEFAULT false
);
CREATE INDEX bridge_watch_due_idx ON bridge_watch (silent_after) WHERE NOT offline;
