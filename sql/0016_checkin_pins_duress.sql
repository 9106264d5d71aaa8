-- Check-in PINs and the duress answer (API.md "Check-ins").
--
-- A user's safe and duress PINs, hashed like passwords (scrypt, PHC strings). Once set, a
-- check-in is completed or cancelled only with one of them.
CREATE TABLE user_pins (
    tenant_id uuid NOT NULL,
    user_id uuid NOT NULL,
    safe_hash text NOT NULL CHECK (safe_hash LIKE '$scrypt$%'),
    duress_hash text NOT NULL CHECK (duress_hash LIKE '$scrypt$%'),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, user_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
SELECT roost_protect_tenant_table('user_pins');

-- The silent alert a duress PIN raises is hidden from one user, the walker it is about: the
-- message, its alert row and every event of the group about it. Row security hides such rows
-- from a transaction whose viewer (`roost.viewer_id`, set for a signed-in user's request) is
-- that user, in every read of the REST API at once; jobs and other members see them.
ALTER TABLE messages ADD COLUMN hidden_from uuid;
ALTER TABLE alerts ADD COLUMN hidden_from uuid;
ALTER TABLE group_events ADD COLUMN hidden_from uuid;

-- The user a transaction reads for, or NULL (jobs, the operator, the stream's own reads).
CREATE FUNCTION roost_current_viewer() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT nullif(current_setting('roost.viewer_id', true), '')::uuid $$;

-- Restrictive, for reads only (UPDATE and DELETE read through it too): a change that writes a
-- hidden row does so with the viewer cleared.
CREATE POLICY hidden_from_viewer ON messages AS RESTRICTIVE FOR SELECT
    USING (hidden_from IS NULL OR hidden_from IS DISTINCT FROM roost_current_viewer());
CREATE POLICY hidden_from_viewer ON alerts AS RESTRICTIVE FOR SELECT
    USING (hidden_from IS NULL OR hidden_from IS DISTINCT FROM roost_current_viewer());
CREATE POLICY hidden_from_viewer ON group_events AS RESTRICTIVE FOR SELECT
    USING (hidden_from IS NULL OR hidden_from IS DISTINCT FROM roost_current_viewer());

-- When a check-in was answered with the duress PIN (never shown to its walker), and the silent
-- alert in each watching group (apart from the walker's `alert_seq`, which stays as it was).
ALTER TABLE checkins ADD COLUMN duress_at timestamptz;
ALTER TABLE checkin_groups ADD COLUMN duress_seq bigint;
