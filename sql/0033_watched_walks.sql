-- A group's watchers see the walks it watches (GET /v1/groups/{gid}/checkins, issue #56):
-- found by group, where checkin_groups' key leads with the check-in.
CREATE INDEX checkin_groups_by_group ON checkin_groups (tenant_id, group_id, checkin_id);
