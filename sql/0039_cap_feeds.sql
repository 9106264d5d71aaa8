-- Official warnings (issue #60, docs/OPERATIONS.md "Official warnings (CAP feeds)"): the
-- operator's CAP feeds, which groups take them, and the warnings that became alerts.

-- A warning is authored, and may be closed, by the feed it came from.
ALTER TABLE messages DROP CONSTRAINT messages_author_type_check;
ALTER TABLE messages ADD CONSTRAINT messages_author_type_check CHECK (author_type IN ('user', 'bridge', 'system', 'feed'));
ALTER TABLE alerts DROP CONSTRAINT alerts_closed_by_type_check;
ALTER TABLE alerts ADD CONSTRAINT alerts_closed_by_type_check CHECK (closed_by_type IN ('user', 'bridge', 'system', 'feed'));
ALTER TABLE group_events DROP CONSTRAINT group_events_actor_type_check;
ALTER TABLE group_events ADD CONSTRAINT group_events_actor_type_check CHECK (actor_type IN ('user', 'bridge', 'system', 'feed'));
ALTER TABLE audit_log DROP CONSTRAINT audit_log_actor_type_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_actor_type_check CHECK (actor_type IN ('user', 'bridge', 'system', 'operator', 'feed'));

-- A group takes official warnings only when its owner or an admin turns them on, from a least
-- severity; a group in drill mode also takes a feed's Test and Exercise messages. Constant
-- defaults: no table rewrite.
ALTER TABLE groups
    ADD COLUMN feeds_enabled boolean NOT NULL DEFAULT false,
    ADD COLUMN feeds_min_severity text NOT NULL DEFAULT 'amber' CHECK (feeds_min_severity IN ('info', 'amber', 'red')),
    ADD COLUMN drill boolean NOT NULL DEFAULT false;

-- The feeds the operator configured: the deployment's, not a tenant's, so without row security.
-- They hold a public URL and which tenants take them, never a person's data. `next_poll_at` is
-- also the lease: the node that claims a feed moves it on first, so another node polls it only
-- if the first died mid-poll.
CREATE TABLE cap_feeds (
    id uuid PRIMARY KEY,
    url text NOT NULL UNIQUE CHECK (length(url) <= 2048),
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    all_tenants boolean NOT NULL,
    tenant_ids uuid[] NOT NULL DEFAULT '{}',
    poll_s integer NOT NULL CHECK (poll_s BETWEEN 10 AND 86400),
    -- Only this sender's alerts (a national feed carrying every agency's), when set.
    sender text CHECK (length(sender) BETWEEN 1 AND 500),
    etag text CHECK (length(etag) <= 500),
    last_modified text CHECK (length(last_modified) <= 100),
    next_poll_at timestamptz NOT NULL DEFAULT now(),
    polled_at timestamptz,
    last_status text CHECK (length(last_status) <= 500),
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (all_tenants OR cardinality(tenant_ids) > 0)
);
CREATE INDEX cap_feeds_due_idx ON cap_feeds (next_poll_at);

-- The entries of a feed already taken, as the publisher last dated them: an entry listed again
-- unchanged is not fetched again. Forgotten a week after the feed stops listing them.
CREATE TABLE cap_feed_entries (
    feed_id uuid NOT NULL REFERENCES cap_feeds (id) ON DELETE CASCADE,
    key text NOT NULL CHECK (length(key) <= 2048),
    updated text NOT NULL CHECK (length(updated) <= 100),
    listed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (feed_id, key)
);

-- Which alert a warning became in a group, under every (sender, identifier) it was published
-- as: an Update or a Cancel names its forerunners in `references`, and finds the alert here.
-- The same warning polled again is the same alert.
CREATE TABLE cap_warnings (
    tenant_id uuid NOT NULL,
    group_id uuid NOT NULL,
    sender text NOT NULL CHECK (length(sender) <= 500),
    identifier text NOT NULL CHECK (length(identifier) <= 500),
    seq bigint NOT NULL,
    PRIMARY KEY (tenant_id, group_id, sender, identifier),
    FOREIGN KEY (tenant_id, group_id, seq) REFERENCES alerts (tenant_id, group_id, seq) ON DELETE CASCADE
);
SELECT roost_protect_tenant_table('cap_warnings');

-- A warning's alert closes when the warning expires: a job like the others (ids and times only,
-- claimed across tenants).
CREATE TABLE cap_expiries (
    message_id uuid PRIMARY KEY,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    group_id uuid NOT NULL,
    seq bigint NOT NULL,
    due_at timestamptz NOT NULL,
    attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error text CHECK (length(last_error) <= 500),
    parked_at timestamptz
);
CREATE INDEX cap_expiries_due_idx ON cap_expiries (due_at) WHERE parked_at IS NULL;
