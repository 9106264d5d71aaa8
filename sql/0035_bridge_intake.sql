-- What a bridge knows about itself, and the keys for devices that cannot set a header
-- (API.md "Bridges, extended", issue #58). Every column added here is nullable or has a
-- constant default: no table rewrite.

ALTER TABLE bridges
    -- SHA-256 of the secret of the bridge's hook URL (/v1/bridge/hooks/{secret}); the secret
    -- is shown once, like the key.
    ADD COLUMN hook_hash bytea CHECK (length(hook_hash) = 32),
    -- Where the bridge is (a house, a gate): its alerts carry it when they name no place of
    -- their own. Shown only to the group's members, as every alert is.
    ADD COLUMN place_address text CHECK (length(place_address) BETWEEN 1 AND 200),
    ADD COLUMN place_location jsonb,
    -- Disarmed: its alerts are recorded as information and page nobody. On a schedule: armed
    -- each day from `from` until `until` (HH:MM) in `time_zone`, disarmed the rest of the day.
    ADD COLUMN arm text NOT NULL DEFAULT 'armed' CHECK (arm IN ('armed', 'disarmed', 'schedule')),
    ADD COLUMN arm_schedule jsonb,
    -- At most one new alert per dedup_key in this many seconds: a trigger sooner counts as a
    -- repeat of the last one, even when that one was resolved.
    ADD COLUMN cooldown_s integer CHECK (cooldown_s BETWEEN 60 AND 86400),
    -- How the bridge's MQTT topics are read.
    ADD COLUMN profile text NOT NULL DEFAULT 'roost' CHECK (profile IN ('roost', 'frigate', 'home_assistant'));

ALTER TABLE bridges ADD CONSTRAINT bridges_schedule_with_arm CHECK ((arm = 'schedule') = (arm_schedule IS NOT NULL));

CREATE UNIQUE INDEX bridges_hook_hash ON bridges (tenant_id, hook_hash) WHERE hook_hash IS NOT NULL;

-- The cooldown reads a bridge's newest alert under a dedup_key, open or not.
CREATE INDEX alerts_bridge_dedup_key ON alerts (tenant_id, bridge_id, dedup_key, seq DESC) WHERE bridge_id IS NOT NULL;
