-- A post's repeat check looks its `client_msg_id` up by author and client id first. The unique
-- key that makes posts idempotent led with (tenant_id, group_id), the primary key's own first
-- columns, so PostgreSQL could answer the check through either index. With no statistics for
-- `messages` yet (a new cluster, until autovacuum has analysed the table), both cost the
-- planner the same, and a prepared statement's generic plan often chose the primary key,
-- reading every message of the group for each post and keeping that plan until the table was
-- analysed: a chat line went from 0.2 ms of PostgreSQL's CPU to 1.1 as groups grew, and a
-- shared commit's statement (`MessageStore.postChatLines`), 25 s into a benchmark, 4x slower
-- than with statistics. Led by (author_id, client_msg_id), and with the check comparing the
-- group by IS NOT DISTINCT FROM, which no index can use (`MessageStore.repeatCondition`), the
-- check can only go through this key; the primary key offers it the tenant's messages alone.
-- What the key forbids is unchanged.
--
-- Building it blocks writes to `messages` for as long as reading the table's messages with a
-- client id takes, once.
CREATE UNIQUE INDEX messages_repeat_key ON messages (author_id, client_msg_id, tenant_id, group_id)
    WHERE client_msg_id IS NOT NULL;
DROP INDEX messages_client_msg_id_key;
ALTER INDEX messages_repeat_key RENAME TO messages_client_msg_id_key;
