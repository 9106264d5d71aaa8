-- Incidents (API.md "Incidents"): what a client needs to draw its screens, and the record the
-- all clear and escalation are built on.
--
-- A member's read marker: the newest seq they have seen in the group, moved forward only
-- (POST /v1/groups/{gid}/read). A new member starts at the group's newest seq, so a backlog
-- from before they joined is not "unread".
ALTER TABLE memberships ADD COLUMN read_seq bigint NOT NULL DEFAULT 0 CHECK (read_seq >= 0);

-- How far an open red alert has escalated (0 until then; at most 3).
ALTER TABLE alerts ADD COLUMN escalation_level smallint NOT NULL DEFAULT 0 CHECK (escalation_level BETWEEN 0 AND 3);

-- Who was pushed an alert (a member with at least one device, other than its author): the
-- receipts' "pushed", and everyone the all clear goes to.
CREATE TABLE alert_recipients (
    tenant_id uuid NOT NULL,
    group_id uuid NOT NULL,
    seq bigint NOT NULL,
    user_id uuid NOT NULL,
    pushed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, group_id, seq, user_id),
    FOREIGN KEY (tenant_id, group_id, seq) REFERENCES alerts (tenant_id, group_id, seq) ON DELETE CASCADE
);
SELECT roost_protect_tenant_table('alert_recipients');

-- Replies to a message, oldest first.
CREATE INDEX messages_reply_to_idx ON messages (tenant_id, group_id, reply_to, seq) WHERE reply_to IS NOT NULL;
