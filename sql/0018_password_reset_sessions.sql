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

-- A reset request waits here for the scheduler, which looks the account up, writes its code and
-- queues the message (or does nothing for an address no account has) and deletes the request:
-- the request itself does the same work whoever asked, so its answer takes the same time.
CREATE TABLE password_reset_requests (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    email text CHECK (length(email) <= 254),
    phone text CHECK (length(phone) <= 16),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CHECK ((email IS NULL) <> (phone IS NULL))
);
SELECT roost_protect_tenant_table('password_reset_requests');

-- Their jobs, claimed across tenants: ids and times only.
CREATE TABLE password_reset_jobs (
    request_id uuid PRIMARY KEY,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    due_at timestamptz NOT NULL DEFAULT now(),
    attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error text CHECK (length(last_error) <= 500),
    parked_at timestamptz
);
CREATE INDEX password_reset_jobs_due_idx ON password_reset_jobs (due_at) WHERE parked_at IS NULL;
