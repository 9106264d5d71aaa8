-- A group's event counter moves out of `groups` into a narrow table of its own. Every event
-- takes the next seq with UPDATE ... RETURNING (which also serialises the group's writers).
-- On `groups` that update checked all seven of the group's CHECK constraints (PostgreSQL
-- checks every one on any update) and wrote the whole row to the WAL again: about a tenth of
-- PostgreSQL's CPU per post. Here it writes three columns and checks nothing; and a change to
-- a group's settings no longer waits for its writers, nor they for it.
--
-- The group's events hang from its counter row, so that the foreign-key check of each new
-- event locks the row its own transaction has just updated (on `groups`, concurrent posts
-- would each have share-locked the group's row, making a multixact of every busy group).
-- Deleting a group still deletes everything: groups → group_seqs → group_events → messages.
CREATE TABLE group_seqs (
    tenant_id uuid NOT NULL,
    group_id uuid NOT NULL,
    -- The last seq taken; 0 before the first event. Only ever incremented, so not CHECKed.
    last_seq bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, group_id),
    FOREIGN KEY (tenant_id, group_id) REFERENCES groups (tenant_id, id) ON DELETE CASCADE
);
SELECT roost_protect_tenant_table('group_seqs');

-- The owner is bound by row security too (FORCE): lifted for the copy, inside this
-- migration's transaction.
ALTER TABLE groups NO FORCE ROW LEVEL SECURITY;
ALTER TABLE group_seqs NO FORCE ROW LEVEL SECURITY;
INSERT INTO group_seqs (tenant_id, group_id, last_seq) SELECT tenant_id, id, last_seq FROM groups;
ALTER TABLE groups FORCE ROW LEVEL SECURITY;
ALTER TABLE group_seqs FORCE ROW LEVEL SECURITY;

ALTER TABLE group_events DROP CONSTRAINT group_events_tenant_id_group_id_fkey;
ALTER TABLE group_events ADD CONSTRAINT group_events_tenant_id_group_id_fkey
    FOREIGN KEY (tenant_id, group_id) REFERENCES group_seqs (tenant_id, group_id) ON DELETE CASCADE;
ALTER TABLE groups DROP COLUMN last_seq;
