-- Who did what to a group (API.md "Accounts": audit), written in the transaction of the change:
-- roles, removals, invitations, bridges, alerts closed and reopened, templates, settings,
-- escalation contacts, the group's deletion. The actor's name is joined when read (an erased
-- account reads as "deleted user"); `data` holds no address or name. `group_id` has no foreign
-- key: a deleted group's record stays for the operator. `hidden_from` as on messages: the close of
-- a duress alert is not shown to its walker.
CREATE TABLE audit_log (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    group_id uuid,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor_type text NOT NULL CHECK (actor_type IN ('user', 'bridge', 'system')),
    actor_id uuid,
    action text NOT NULL CHECK (action ~ '^[a-z_]+\.[a-z_]+$'),
    target_type text CHECK (target_type IN ('user', 'invitation', 'bridge', 'alert', 'escalation_contact', 'group', 'templates')),
    target_id text CHECK (length(target_id) <= 64),
    data jsonb NOT NULL DEFAULT '{}',
    hidden_from uuid,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX audit_log_group_idx ON audit_log (tenant_id, group_id, at DESC, id DESC);
CREATE INDEX audit_log_tenant_idx ON audit_log (tenant_id, at DESC, id DESC);
SELECT roost_protect_tenant_table('audit_log');
CREATE POLICY hidden_from_viewer ON audit_log AS RESTRICTIVE FOR SELECT
    USING (hidden_from IS NULL OR hidden_from IS DISTINCT FROM roost_current_viewer());
