-- An alert to a large group fans out as one job (issue #55). Raising it writes one `fanouts`
-- row and its job in the alert's own transaction instead of a push row per device; the
-- delivery engine then expands it a few hundred members at a time, each batch in its own
-- transaction that also moves the job's cursor, so a batch is queued exactly once however
-- often a node dies. A small group's pushes are still written with the alert (OutboxStore).
CREATE TABLE fanouts (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    group_id uuid NOT NULL,
    seq bigint NOT NULL,
    -- Who raised it (a member), never pushed their own alert; NULL for a bridge.
    author_id uuid,
    red boolean NOT NULL,
    -- The alert as its pushes carry it.
    alert jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
SELECT roost_protect_tenant_table('fanouts');

-- What the engine finds across tenants: ids only (hence no row security). `after_user`: the
-- members up to this id are expanded. A batch locks its job's row, so two nodes expanding one
-- fanout take turns, each batch after the last.
CREATE TABLE fanout_jobs (
    fanout_id uuid PRIMARY KEY,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    after_user uuid,
    created_at timestamptz NOT NULL DEFAULT now()
);
