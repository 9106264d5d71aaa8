-- Incidents, second part (API.md "Incidents"): escalation when nobody comes, nearest first,
-- and live location while help is on the way.

-- A group's settings: how long an open red alert waits for an `on_my_way` answer before it
-- escalates (NULL: never), and how near a member's home must be for the critical push.
ALTER TABLE groups
    ADD COLUMN escalate_after_s integer DEFAULT 300 CHECK (escalate_after_s BETWEEN 60 AND 3600),
    ADD COLUMN nearby_m integer NOT NULL DEFAULT 500 CHECK (nearby_m BETWEEN 50 AND 50000);

-- Great-circle distance in metres between two `{"lat","lon",...}` objects (a message's or a
-- live point's location, a home's `location`); NULL when either is missing.
CREATE FUNCTION roost_distance_m(a jsonb, b jsonb) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT 2 * 6371008.8 * asin(least(1, sqrt(
               power(sin(radians((b->>'lat')::float8 - (a->>'lat')::float8) / 2), 2)
             + cos(radians((a->>'lat')::float8)) * cos(radians((b->>'lat')::float8))
             * power(sin(radians((b->>'lon')::float8 - (a->>'lon')::float8) / 2), 2))))
    WHERE jsonb_typeof(a->'lat') = 'number' AND jsonb_typeof(a->'lon') = 'number'
      AND jsonb_typeof(b->'lat') = 'number' AND jsonb_typeof(b->'lon') = 'number'
$$;

-- People outside the app a group's managers name for level 2 of an escalation. Each has one
-- address and confirms it once, through the link of the one message sent when they are added;
-- nothing else is sent to them before. Only SHA-256 of the link's token is stored.
CREATE TABLE escalation_contacts (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    group_id uuid NOT NULL,
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    email text CHECK (email = lower(email) AND length(email) <= 254),
    phone text CHECK (phone ~ '^\+[1-9][0-9]{7,14}$'),
    token_hash bytea NOT NULL CHECK (length(token_hash) = 32),
    token_expires_at timestamptz NOT NULL,
    confirmed_at timestamptz,
    created_by uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, group_id) REFERENCES groups (tenant_id, id) ON DELETE CASCADE,
    CHECK ((email IS NULL) <> (phone IS NULL))
);
CREATE UNIQUE INDEX escalation_contacts_token_key ON escalation_contacts (tenant_id, token_hash);
CREATE UNIQUE INDEX escalation_contacts_email_key ON escalation_contacts (tenant_id, group_id, email) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX escalation_contacts_phone_key ON escalation_contacts (tenant_id, group_id, phone) WHERE phone IS NOT NULL;
SELECT roost_protect_tenant_table('escalation_contacts');

-- The next escalation of each open red alert that may still escalate: ids and a time only (no
-- row security, like checkin_deadlines), claimed with FOR UPDATE SKIP LOCKED so each level
-- fires once whatever the number of nodes. A row lives while its alert may escalate further.
CREATE TABLE alert_escalations (
    escalation_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    group_id uuid NOT NULL,
    seq bigint NOT NULL,
    -- When the alert (re)opened: level n is due n times the group's escalate_after_s later.
    since timestamptz NOT NULL,
    due_at timestamptz NOT NULL,
    attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error text CHECK (length(last_error) <= 500),
    parked_at timestamptz,
    UNIQUE (tenant_id, group_id, seq)
);
CREATE INDEX alert_escalations_due_idx ON alert_escalations (due_at) WHERE parked_at IS NULL;

-- The newest point of each live sharer of an alert; the row is deleted when sharing ends.
-- `noticed_at` is when the last `location.updated` notice for the sharer went out.
CREATE TABLE live_locations (
    tenant_id uuid NOT NULL,
    group_id uuid NOT NULL,
    seq bigint NOT NULL,
    user_id uuid NOT NULL,
    lat double precision NOT NULL CHECK (lat BETWEEN -90 AND 90),
    lon double precision NOT NULL CHECK (lon BETWEEN -180 AND 180),
    accuracy_m double precision CHECK (accuracy_m >= 0),
    battery smallint CHECK (battery BETWEEN 0 AND 100),
    at timestamptz NOT NULL,
    noticed_at timestamptz,
    PRIMARY KEY (tenant_id, group_id, seq, user_id),
    FOREIGN KEY (tenant_id, group_id, seq) REFERENCES alerts (tenant_id, group_id, seq) ON DELETE CASCADE
);
SELECT roost_protect_tenant_table('live_locations');

-- What each sharing waits for, across tenants (ids and times only): the coalesced point's
-- notice (`flush`) or, without one, the end of sharing after an hour without an update.
CREATE TABLE live_location_jobs (
    job_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    group_id uuid NOT NULL,
    seq bigint NOT NULL,
    user_id uuid NOT NULL,
    due_at timestamptz NOT NULL,
    flush boolean NOT NULL DEFAULT false,
    attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error text CHECK (length(last_error) <= 500),
    parked_at timestamptz,
    UNIQUE (tenant_id, group_id, seq, user_id)
);
CREATE INDEX live_location_jobs_due_idx ON live_location_jobs (due_at) WHERE parked_at IS NULL;
