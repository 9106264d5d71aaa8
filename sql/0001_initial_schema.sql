-- Roost's first schema: tenants, accounts, groups, invitations, the group event log,
-- messages and alerts, templates and the outbox (API.md: Operator, Accounts, Groups and
-- members, Invitations, Messages and alerts, Outbound delivery).
--
-- Rules every tenant-owned table keeps:
--   * tenant_id leads the primary key and every index (the shape Citus needs to shard by tenant);
--   * row-level security compares tenant_id with the transaction's roost.tenant_id, and FORCE
--     makes the policy bind the owning role too: with no tenant set, no row is visible.
-- Applied files are never edited; later changes go in new numbered files.

-- The tenant registry is the operator's: it is read before a tenant is known (login by slug),
-- so it has no row security. It holds no personal data.
CREATE TABLE tenants (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    slug text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9-]{2,40}$'),
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    registration text NOT NULL DEFAULT 'open' CHECK (registration IN ('open', 'invite_only')),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The tenant of the current transaction, or NULL when none is set (the setting reads '' after
-- a SET LOCAL ends, hence nullif).
CREATE FUNCTION roost_current_tenant() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT nullif(current_setting('roost.tenant_id', true), '')::uuid $$;

CREATE TABLE users (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    email text CHECK (email = lower(email) AND length(email) <= 254),
    phone text CHECK (phone ~ '^\+[1-9][0-9]{7,14}$'),
    email_verified boolean NOT NULL DEFAULT false,
    phone_verified boolean NOT NULL DEFAULT false,
    -- scrypt in a self-describing string; NULL once the account is erased.
    password_hash text,
    display_name text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 100),
    home jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz,
    PRIMARY KEY (tenant_id, id),
    CHECK (email IS NOT NULL OR phone IS NOT NULL OR deleted_at IS NOT NULL)
);
CREATE UNIQUE INDEX users_tenant_email_key ON users (tenant_id, email) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX users_tenant_phone_key ON users (tenant_id, phone) WHERE phone IS NOT NULL;

-- Only SHA-256 of a session token is stored.
CREATE TABLE sessions (
    tenant_id uuid NOT NULL,
    token_hash bytea NOT NULL CHECK (length(token_hash) = 32),
    user_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, token_hash),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX sessions_tenant_user_idx ON sessions (tenant_id, user_id);

-- A 6-digit code, hashed, that proves a user controls an email address or phone number.
CREATE TABLE contact_verifications (
    tenant_id uuid NOT NULL,
    user_id uuid NOT NULL,
    channel text NOT NULL CHECK (channel IN ('email', 'phone')),
    address text NOT NULL,
    code_hash bytea NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, user_id, channel),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE devices (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL,
    platform text NOT NULL CHECK (platform IN ('apns', 'fcm', 'webpush', 'unifiedpush')),
    token text NOT NULL CHECK (length(token) BETWEEN 1 AND 4096),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, user_id, platform, token),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);

-- last_seq is the group's event counter: a write takes the next one with
-- UPDATE ... SET last_seq = last_seq + 1 RETURNING, which also serialises writers per group.
CREATE TABLE groups (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    description text NOT NULL DEFAULT '' CHECK (length(description) <= 2000),
    last_seq bigint NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
    created_by uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE memberships (
    tenant_id uuid NOT NULL,
    group_id uuid NOT NULL,
    user_id uuid NOT NULL,
    role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    joined_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, group_id, user_id),
    FOREIGN KEY (tenant_id, group_id) REFERENCES groups (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
-- "My groups" in one index scan.
CREATE INDEX memberships_tenant_user_idx ON memberships (tenant_id, user_id, group_id);
-- Exactly one owner a group: at most one here, at least one kept by the service layer.
CREATE UNIQUE INDEX memberships_one_owner_key ON memberships (tenant_id, group_id) WHERE role = 'owner';

CREATE TABLE invitations (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    group_id uuid NOT NULL,
    email text CHECK (email = lower(email)),
    phone text CHECK (phone ~ '^\+[1-9][0-9]{7,14}$'),
    role text NOT NULL DEFAULT 'member' CHECK (role IN ('admin', 'member')),
    token_hash bytea NOT NULL CHECK (length(token_hash) = 32),
    invited_by uuid,
    status text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'accepted', 'declined', 'revoked', 'expired')),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    responded_at timestamptz,
    accepted_by uuid,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, token_hash),
    CHECK ((email IS NULL) <> (phone IS NULL)),
    FOREIGN KEY (tenant_id, group_id) REFERENCES groups (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX invitations_pending_email_key ON invitations (tenant_id, group_id, email)
    WHERE status = 'pending' AND email IS NOT NULL;
CREATE UNIQUE INDEX invitations_pending_phone_key ON invitations (tenant_id, group_id, phone)
    WHERE status = 'pending' AND phone IS NOT NULL;
CREATE INDEX invitations_tenant_email_idx ON invitations (tenant_id, email) WHERE status = 'pending';
CREATE INDEX invitations_tenant_phone_idx ON invitations (tenant_id, phone) WHERE status = 'pending';

-- The append-only log of everything that happens in a group, gapless per group.
CREATE TABLE group_events (
    tenant_id uuid NOT NULL,
    group_id uuid NOT NULL,
    seq bigint NOT NULL CHECK (seq > 0),
    event text NOT NULL CHECK (event ~ '^[a-z_]+\.[a-z_]+$'),
    actor_type text CHECK (actor_type IN ('user', 'bridge', 'system')),
    actor_id uuid,
    data jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, group_id, seq),
    FOREIGN KEY (tenant_id, group_id) REFERENCES groups (tenant_id, id) ON DELETE CASCADE
);

-- Messages are the projection of message.created events: seq is the event's seq.
CREATE TABLE messages (
    tenant_id uuid NOT NULL,
    group_id uuid NOT NULL,
    seq bigint NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    author_type text NOT NULL CHECK (author_type IN ('user', 'bridge', 'system')),
    author_id uuid,
    kind text NOT NULL CHECK (kind IN ('chat', 'alert')),
    text text NOT NULL CHECK (length(text) <= 4000),
    template text,
    location jsonb,
    reply_to bigint,
    client_msg_id text CHECK (length(client_msg_id) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now(),
    redacted_at timestamptz,
    PRIMARY KEY (tenant_id, group_id, seq),
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, group_id, seq) REFERENCES group_events (tenant_id, group_id, seq) ON DELETE CASCADE
);
-- Idempotent posts: one message per (author, group, client_msg_id).
CREATE UNIQUE INDEX messages_client_msg_id_key ON messages (tenant_id, group_id, author_id, client_msg_id)
    WHERE client_msg_id IS NOT NULL;

CREATE TABLE alerts (
    tenant_id uuid NOT NULL,
    group_id uuid NOT NULL,
    seq bigint NOT NULL,
    severity text NOT NULL CHECK (severity IN ('info', 'amber', 'red')),
    status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    opened_at timestamptz NOT NULL DEFAULT now(),
    closed_at timestamptz,
    closed_by_type text CHECK (closed_by_type IN ('user', 'bridge', 'system')),
    closed_by uuid,
    resolution text CHECK (length(resolution) <= 2000),
    dedup_key text CHECK (length(dedup_key) BETWEEN 1 AND 200),
    bridge_id uuid,
    repeat_count integer NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, group_id, seq),
    FOREIGN KEY (tenant_id, group_id, seq) REFERENCES messages (tenant_id, group_id, seq) ON DELETE CASCADE,
    CHECK ((status = 'open') = (closed_at IS NULL))
);
-- "Open alerts in my groups" reads this partial index only.
CREATE INDEX alerts_open_idx ON alerts (tenant_id, group_id, seq) WHERE status = 'open';

CREATE TABLE alert_acks (
    tenant_id uuid NOT NULL,
    group_id uuid NOT NULL,
    seq bigint NOT NULL,
    user_id uuid NOT NULL,
    response text NOT NULL CHECK (response IN ('seen', 'on_my_way', 'cannot_help')),
    note text CHECK (length(note) <= 1000),
    at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, group_id, seq, user_id),
    FOREIGN KEY (tenant_id, group_id, seq) REFERENCES alerts (tenant_id, group_id, seq) ON DELETE CASCADE
);

CREATE TABLE templates (
    tenant_id uuid NOT NULL,
    group_id uuid NOT NULL,
    key text NOT NULL CHECK (key ~ '^[a-z0-9_]{1,64}$'),
    position integer NOT NULL,
    text text NOT NULL CHECK (length(text) BETWEEN 1 AND 4000),
    kind text NOT NULL CHECK (kind IN ('chat', 'alert')),
    severity text CHECK (severity IN ('info', 'amber', 'red')),
    PRIMARY KEY (tenant_id, group_id, key),
    FOREIGN KEY (tenant_id, group_id) REFERENCES groups (tenant_id, id) ON DELETE CASCADE
);

-- Deliveries to the outside world, written in the transaction that caused them.
CREATE TABLE outbox (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    channel text NOT NULL CHECK (channel IN ('email', 'sms', 'push')),
    recipient text NOT NULL,
    template text NOT NULL CHECK (template ~ '^[a-z_]+$'),
    data jsonb NOT NULL DEFAULT '{}',
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX outbox_due_idx ON outbox (tenant_id, next_attempt_at) WHERE status = 'pending';

-- Row-level security on every tenant-owned table, binding the owner too.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['users', 'sessions', 'contact_verifications', 'devices', 'groups',
                             'memberships', 'invitations', 'group_events', 'messages', 'alerts',
                             'alert_acks', 'templates', 'outbox']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = roost_current_tenant()) '
            'WITH CHECK (tenant_id = roost_current_tenant())', t);
    END LOOP;
END
$$;
