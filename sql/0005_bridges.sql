-- Bridges (API.md "Bridges (home security systems)"): services that post alerts into one group
-- with a key of their own, deduplicated by the sender's dedup_key.

CREATE TABLE bridges (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    group_id uuid NOT NULL,
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    -- SHA-256 of the key; the key itself is shown once.
    key_hash bytea NOT NULL CHECK (length(key_hash) = 32),
    -- The HMAC signing secret, when the bridge signs its requests. It must be kept to verify
    -- signatures, so unlike keys it is stored as issued.
    signing_secret text,
    heartbeat_s integer CHECK (heartbeat_s BETWEEN 10 AND 86400),
    last_seen_at timestamptz,
    offline boolean NOT NULL DEFAULT false,
    -- Token bucket: rate_per_minute refill, up to burst.
    rate_per_minute integer NOT NULL DEFAULT 60 CHECK (rate_per_minute BETWEEN 1 AND 6000),
    burst integer NOT NULL DEFAULT 20 CHECK (burst BETWEEN 1 AND 1000),
    tokens double precision NOT NULL DEFAULT 20,
    tokens_at timestamptz NOT NULL DEFAULT now(),
    created_by uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, key_hash),
    FOREIGN KEY (tenant_id, group_id) REFERENCES groups (tenant_id, id) ON DELETE CASCADE
);

-- At most one open alert per (bridge, dedup_key): twenty identical triggers at once make one.
CREATE UNIQUE INDEX alerts_bridge_open_dedup_key ON alerts (tenant_id, bridge_id, dedup_key)
    WHERE status = 'open' AND bridge_id IS NOT NULL;

-- What a bridge sent along with an alert (≤ 16 KiB, checked by the server).
ALTER TABLE alerts ADD COLUMN details jsonb;

-- Signatures seen within the replay window, so a replayed signed request is refused.
CREATE TABLE bridge_signatures (
    tenant_id uuid NOT NULL,
    bridge_id uuid NOT NULL,
    signature bytea NOT NULL,
    seen_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, bridge_id, signature),
    FOREIGN KEY (tenant_id, bridge_id) REFERENCES bridges (tenant_id, id) ON DELETE CASCADE
);

SELECT roost_protect_tenant_table('bridges');
SELECT roost_protect_tenant_table('bridge_signatures');
