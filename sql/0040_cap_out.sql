-- A group's alerts as CAP (issue #60, API.md "Group areas and CAP"): the token the group's
-- owner hands to another system (a municipality's dashboard, a CAP aggregator) to read the
-- group's alerts as an Atom feed of CAP 1.2 documents. A request names the group and the token,
-- not a tenant, so this index is deliberately without row security: it holds the token's
-- SHA-256 and ids, never the token or anything of a person. One token a group; a new one
-- replaces it, and the group's deletion removes it.
CREATE TABLE cap_tokens (
    token_hash bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    tenant_id uuid NOT NULL,
    group_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, group_id),
    FOREIGN KEY (tenant_id, group_id) REFERENCES groups (tenant_id, id) ON DELETE CASCADE
);
