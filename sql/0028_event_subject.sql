-- The member a membership event is about, as a column of its own (#54): the fanout reads who
-- joined or left from the log's rows as it does from the notices, and never parses the event's
-- JSON for it. Written by every append that has a subject; the events already logged get it
-- from their data once, here. Adding a nullable column without a default rewrites nothing.
ALTER TABLE group_events ADD COLUMN subject uuid;
UPDATE group_events SET subject = (data->>'user_id')::uuid
WHERE event IN ('member.joined', 'member.left', 'member.removed') AND data ? 'user_id';
