-- Check-ins, extended (API.md "Check-ins", issue #18): a prompt and a grace period before the
-- alert, answers (cancel, "I need help"), a destination that ends a walk by arriving, a
-- no-movement trigger, several watching groups, and the trail the alert shares.
--
-- One job row per check-in (`checkin_deadlines`) carries it through its whole life: the prompt
-- at the deadline (or when it stood still too long), the alert at the end of the grace, the end
-- of a check-in whose alert went out and that nobody completed (a day later), and the deletion
-- of its locations a day after it ended. `CheckinPolicy` decides which from the columns below.

ALTER TABLE checkins DROP CONSTRAINT checkins_status_check;
ALTER TABLE checkins ADD CONSTRAINT checkins_status_check
    CHECK (status IN ('active', 'prompting', 'missed', 'escalated', 'completed', 'cancelled'));

ALTER TABLE checkins
    -- How long the walker has to answer the prompt before the alert goes out.
    ADD COLUMN grace_s integer NOT NULL DEFAULT 900 CHECK (grace_s BETWEEN 0 AND 3600),
    ADD COLUMN prompted_at timestamptz,
    -- When the alert went out (missed, or the walker asked for help).
    ADD COLUMN alerted_at timestamptz,
    -- `{"lat","lon","radius_m"}`: a location inside it completes the check-in.
    ADD COLUMN destination jsonb,
    -- Standing within 50 m of `still_location` since `still_since` for this long prompts early.
    ADD COLUMN stall_after_s integer CHECK (stall_after_s BETWEEN 60 AND 86400),
    ADD COLUMN still_location jsonb,
    ADD COLUMN still_since timestamptz NOT NULL DEFAULT now(),
    -- The newest location's time and the battery reported with it (0 to 100).
    ADD COLUMN location_at timestamptz,
    ADD COLUMN battery smallint CHECK (battery BETWEEN 0 AND 100),
    -- How it ended: checked_in, arrived, cancelled, or lapsed (an alert nobody completed).
    ADD COLUMN end_reason text CHECK (end_reason IN ('checked_in', 'arrived', 'cancelled', 'lapsed')),
    ADD COLUMN trail_points integer NOT NULL DEFAULT 0 CHECK (trail_points >= 0),
    ADD COLUMN trail_at timestamptz;

-- The groups that watch a check-in (the first is `checkins.group_id`), and the alert it raised
-- in each.
CREATE TABLE checkin_groups (
    tenant_id uuid NOT NULL,
    checkin_id uuid NOT NULL,
    group_id uuid NOT NULL,
    position smallint NOT NULL CHECK (position BETWEEN 0 AND 9),
    alert_seq bigint,
    PRIMARY KEY (tenant_id, checkin_id, group_id),
    FOREIGN KEY (tenant_id, checkin_id) REFERENCES checkins (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, group_id) REFERENCES groups (tenant_id, id) ON DELETE CASCADE
);
SELECT roost_protect_tenant_table('checkin_groups');

-- The check-ins written before this migration watched their one group. The owner is bound by
-- row security too (FORCE), so it is lifted for the copy, inside this migration's transaction.
ALTER TABLE checkins NO FORCE ROW LEVEL SECURITY;
ALTER TABLE checkin_groups NO FORCE ROW LEVEL SECURITY;
INSERT INTO checkin_groups (tenant_id, checkin_id, group_id, position, alert_seq)
SELECT tenant_id, id, group_id, 0, alert_seq FROM checkins;
ALTER TABLE checkins FORCE ROW LEVEL SECURITY;
ALTER TABLE checkin_groups FORCE ROW LEVEL SECURITY;

-- The trail: where the walker was, at most one point per 15 s and 1,000 points a check-in;
-- deleted a day after the check-in ends.
CREATE TABLE checkin_locations (
    tenant_id uuid NOT NULL,
    checkin_id uuid NOT NULL,
    at timestamptz NOT NULL,
    location jsonb NOT NULL,
    battery smallint CHECK (battery BETWEEN 0 AND 100),
    PRIMARY KEY (tenant_id, checkin_id, at),
    FOREIGN KEY (tenant_id, checkin_id) REFERENCES checkins (tenant_id, id) ON DELETE CASCADE
);
SELECT roost_protect_tenant_table('checkin_locations');
