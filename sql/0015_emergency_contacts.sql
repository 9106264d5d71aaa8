-- Emergency contacts (API.md "Check-ins", extended): people outside the app a member names, told
-- by email or SMS when one of their check-ins is missed or they ask for help, and given the all
-- clear after. Like escalation contacts (0011): one address each, confirmed once through the one
-- message sent when they are added, nothing else sent before; only SHA-256 of the link's token.
CREATE TABLE emergency_contacts (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL,
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    email text CHECK (email = lower(email) AND length(email) <= 254),
    phone text CHECK (phone ~ '^\+[1-9][0-9]{7,14}$'),
    token_hash bytea NOT NULL CHECK (length(token_hash) = 32),
    token_expires_at timestamptz NOT NULL,
    confirmed_at timestamptz,
    created_by uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE,
    CHECK ((email IS NULL) <> (phone IS NULL))
);
CREATE UNIQUE INDEX emergency_contacts_token_key ON emergency_contacts (tenant_id, token_hash);
CREATE UNIQUE INDEX emergency_contacts_email_key ON emergency_contacts (tenant_id, user_id, email) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX emergency_contacts_phone_key ON emergency_contacts (tenant_id, user_id, phone) WHERE phone IS NOT NULL;
SELECT roost_protect_tenant_table('emergency_contacts');

-- The contacts watching a check-in. Once told of its alert, each holds its own status page link
-- (`GET /v1/public/checkins/{token}`, only SHA-256 kept), which works until a day after the
-- check-in ends.
CREATE TABLE checkin_contacts (
    tenant_id uuid NOT NULL,
    checkin_id uuid NOT NULL,
    contact_id uuid NOT NULL,
    status_token_hash bytea CHECK (length(status_token_hash) = 32),
    told_at timestamptz,
    PRIMARY KEY (tenant_id, checkin_id, contact_id),
    FOREIGN KEY (tenant_id, checkin_id) REFERENCES checkins (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, contact_id) REFERENCES emergency_contacts (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX checkin_contacts_token_key ON checkin_contacts (tenant_id, status_token_hash) WHERE status_token_hash IS NOT NULL;
SELECT roost_protect_tenant_table('checkin_contacts');
