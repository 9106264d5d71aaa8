-- Moderation and tenant administration (API.md "Moderation and tenant administration",
-- issue #57). Every column added here is nullable or has a constant default: no table rewrite.

-- A member a manager muted until a time: they cannot post chat or amber alerts until then
-- (red alerts and check-ins always go through). Read with the membership check, so free.
ALTER TABLE memberships ADD COLUMN muted_until timestamptz;

-- An account the operator suspended: it cannot sign in, and its sessions were ended.
-- A tenant coordinator (granted by the operator) sees every group of the tenant and acts as
-- its admin without being a member.
ALTER TABLE users ADD COLUMN suspended_at timestamptz,
                  ADD COLUMN coordinator boolean NOT NULL DEFAULT false;
CREATE INDEX users_coordinators_idx ON users (tenant_id, id) WHERE coordinator AND deleted_at IS NULL;

-- A member's report of a message to the group's managers. One open report per member and
-- message; closed with what was done about it.
CREATE TABLE message_reports (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    group_id uuid NOT NULL,
    seq bigint NOT NULL,
    reporter_id uuid,
    reason text NOT NULL CHECK (length(reason) BETWEEN 1 AND 1000),
    status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    action text CHECK (action IN ('none', 'removed')),
    created_at timestamptz NOT NULL DEFAULT now(),
    closed_at timestamptz,
    closed_by uuid,
    PRIMARY KEY (tenant_id, id),
    CHECK ((status = 'open') = (closed_at IS NULL)),
    FOREIGN KEY (tenant_id, group_id) REFERENCES groups (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX message_reports_one_open_key ON message_reports (tenant_id, group_id, seq, reporter_id) WHERE status = 'open';
-- The queue: a group's reports by status, newest first.
CREATE INDEX message_reports_queue_idx ON message_reports (tenant_id, group_id, status, created_at DESC, id DESC);
SELECT roost_protect_tenant_table('message_reports');

-- Who was removed from a group and may not come back by invitation: the user, and the
-- addresses they had when blocked (an invitation to any of them is refused).
CREATE TABLE group_blocks (
    tenant_id uuid NOT NULL,
    group_id uuid NOT NULL,
    user_id uuid NOT NULL,
    email text,
    phone text,
    blocked_by uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, group_id, user_id),
    FOREIGN KEY (tenant_id, group_id) REFERENCES groups (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX group_blocks_email_idx ON group_blocks (tenant_id, group_id, email) WHERE email IS NOT NULL;
CREATE INDEX group_blocks_phone_idx ON group_blocks (tenant_id, group_id, phone) WHERE phone IS NOT NULL;
SELECT roost_protect_tenant_table('group_blocks');

-- The operator acts too (a group's ownership moved, a group deleted), and reports are audited.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_actor_type_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_actor_type_check CHECK (actor_type IN ('user', 'bridge', 'system', 'operator'));
ALTER TABLE audit_log DROP CONSTRAINT audit_log_target_type_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_target_type_check
    CHECK (target_type IN ('user', 'invitation', 'bridge', 'alert', 'escalation_contact', 'group', 'templates', 'message', 'report'));

-- The operator seeds an invite-only tenant: an invitation to register in the tenant, not to a
-- group, as a coordinator or a member. Only a hash of its token is kept; it is answered once.
CREATE TABLE tenant_invitations (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    email text CHECK (email = lower(email)),
    phone text CHECK (phone ~ '^\+[1-9][0-9]{7,14}$'),
    role text NOT NULL CHECK (role IN ('coordinator', 'member')),
    token_hash bytea NOT NULL CHECK (length(token_hash) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    accepted_at timestamptz,
    accepted_by uuid,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, token_hash),
    CHECK ((email IS NULL) <> (phone IS NULL))
);
SELECT roost_protect_tenant_table('tenant_invitations');
