-- Takeover needs the password, and an address change can be undone from the old address
-- (docs/SECURITY.md, "Account takeover"). When a change of email or phone is confirmed, the old
-- address is sent a link that puts it back for 7 days and ends every session. Only a hash of
-- the link's token is kept; `used_at` makes it single-use.
CREATE TABLE contact_undos (
    tenant_id uuid NOT NULL,
    token_hash bytea NOT NULL CHECK (length(token_hash) = 32),
    user_id uuid NOT NULL,
    channel text NOT NULL CHECK (channel IN ('email', 'phone')),
    old_address text NOT NULL CHECK (length(old_address) <= 254),
    old_verified boolean NOT NULL,
    new_address text NOT NULL CHECK (length(new_address) <= 254),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at timestamptz,
    PRIMARY KEY (tenant_id, token_hash),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX contact_undos_user_idx ON contact_undos (tenant_id, user_id);
SELECT roost_protect_tenant_table('contact_undos');
