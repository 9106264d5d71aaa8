-- Lists page by their sort keys (API.md "Conventions": `limit` and a real `next` everywhere).
-- Each list reads its page by an index in its own order, so the last page costs what the first does.

-- Members: the owner, then admins, then members, each by when they joined.
CREATE FUNCTION roost_role_rank(role text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END;
CREATE INDEX memberships_group_order_idx ON memberships (tenant_id, group_id, roost_role_rank(role), joined_at, user_id);

-- A group's invitations and a user's check-ins, newest first.
CREATE INDEX invitations_group_created_idx ON invitations (tenant_id, group_id, created_at DESC, id DESC);
CREATE INDEX checkins_user_created_idx ON checkins (tenant_id, user_id, created_at DESC, id DESC);
