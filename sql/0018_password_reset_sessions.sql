-- Accounts over their life (API.md "Accounts"): sessions a user can see and end one by one,
-- and password reset codes.
--
-- A session gets an id to be named by (its token hash never leaves the server), the client
-- that signed in (`User-Agent`, cut to 200 characters) and the network it came from (an IPv4
-- /24 or IPv6 /48, never the whole address).
ALTER TABLE sessions
    ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid(),
    ADD COLUMN client text CHECK (length(client) <= 200),
    ADD COLUMN network text CHECK (length(network) <= 64);
CREATE UNIQUE INDEX sessions_id_key ON sessions (tenant_id, id);

-- One live reset code per account: a newer request replaces the older (which then no longer
-- matches), keeping its wrong attempts while it is live, so asking again buys no guesses.
-- Only a hash of the code is kept; `used_at` makes it single-use.
CREATE TABLE password_resets (
    tenant_id uuid NOT NULL,
    user_id uuid NOT NULL,
    code_hash bytea NOT NULL CHECK (length(code_hash) = 32),
    attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at timestamptz,
    PRIMARY KEY (tenant_id, user_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
SELECT roost_protect_tenant_table('password_resets');
