-- The group's managers as an audience (issue #59: the silent alert an alarm panel's duress code
-- raises). A message, alert or group event whose `hidden_from` is `roost_managers_only()` (a
-- fixed id that is no user's) is hidden from every viewer who is not the group's owner or one
-- of its admins at the time of reading; with no viewer set (jobs, the fanout's group reads,
-- which filter by the managers themselves) it is read as any row. Everything that follows such
-- an alert (answers, replies, its close, escalation) copies its `hidden_from`, as for the
-- walker's duress alert, so it is managers-only too.
CREATE FUNCTION roost_managers_only() RETURNS uuid
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT '00000000-0000-4000-8000-00000000ad01'::uuid $$;

-- Whether the transaction's viewer is an owner or admin of the group (true with no viewer).
CREATE FUNCTION roost_viewer_manages(group_id uuid) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT roost_current_viewer() IS NULL OR EXISTS (
              SELECT 1 FROM memberships m
              WHERE m.group_id = $1 AND m.user_id = roost_current_viewer() AND m.role IN ('owner', 'admin')) $$;

DROP POLICY hidden_from_viewer ON messages;
DROP POLICY hidden_from_viewer ON alerts;
DROP POLICY hidden_from_viewer ON group_events;
CREATE POLICY hidden_from_viewer ON messages AS RESTRICTIVE FOR SELECT
    USING (hidden_from IS NULL
           OR (hidden_from <> roost_managers_only() AND hidden_from IS DISTINCT FROM roost_current_viewer())
           OR (hidden_from = roost_managers_only() AND roost_viewer_manages(group_id)));
CREATE POLICY hidden_from_viewer ON alerts AS RESTRICTIVE FOR SELECT
    USING (hidden_from IS NULL
           OR (hidden_from <> roost_managers_only() AND hidden_from IS DISTINCT FROM roost_current_viewer())
           OR (hidden_from = roost_managers_only() AND roost_viewer_manages(group_id)));
CREATE POLICY hidden_from_viewer ON group_events AS RESTRICTIVE FOR SELECT
    USING (hidden_from IS NULL
           OR (hidden_from <> roost_managers_only() AND hidden_from IS DISTINCT FROM roost_current_viewer())
           OR (hidden_from = roost_managers_only() AND roost_viewer_manages(group_id)));
