-- Throttles against a hostile user (issue: hold Roost's promises against a hostile user).
--
-- rate_limit_counters counts hits per key in fixed windows for every throttle that is not a
-- login failure: sign-ins naming unknown tenants and registrations per client address (before
-- any tenant is known), invitations per sender, per recipient address and per group, group
-- creation, amber and red alerts per member, verification codes per user and day. A hit is one
-- conditional upsert (the row lock makes concurrent hits count one after the other), so a
-- counter costs the same at its thousandth hit as at its first. Keys are SHA-256 of
-- "<what>:<tenant>:<who>", so the table holds no identifier, address or id in clear and needs no
-- row security; a key keeps only its current window's row.
CREATE TABLE rate_limit_counters (
    key_hash bytea NOT NULL CHECK (length(key_hash) = 32),
    window_start timestamptz NOT NULL,
    hits integer NOT NULL CHECK (hits >= 0),
    PRIMARY KEY (key_hash, window_start)
);

-- A sign-in counts as failed from before its password is checked (so concurrent attempts
-- cannot race past the limit) until it succeeds: `attempt` names the rows to take back then.
ALTER TABLE login_failures ADD COLUMN attempt uuid;
