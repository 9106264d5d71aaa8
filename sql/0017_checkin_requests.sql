-- Check-in requests (API.md "Check-ins"): a member asks a co-member "are you OK?"; the answer
-- is `safe` or `need_help` (a red alert in the group), and with no answer by `expires_at` the
-- requester is told, with the addressee's newest place only if the addressee allows it.
CREATE TABLE checkin_requests (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    group_id uuid NOT NULL,
    requester_id uuid NOT NULL,
    addressee_id uuid NOT NULL CHECK (addressee_id <> requester_id),
    note text NOT NULL DEFAULT '' CHECK (length(note) <= 500),
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'safe', 'need_help', 'expired')),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    answered_at timestamptz,
    -- need_help: the alert raised in the group; expired: the place shared with the requester.
    alert_seq bigint,
    shared_location jsonb,
    shared_location_at timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, group_id) REFERENCES groups (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, requester_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, addressee_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX checkin_requests_sent_idx ON checkin_requests (tenant_id, requester_id, created_at DESC, id DESC);
CREATE INDEX checkin_requests_received_idx ON checkin_requests (tenant_id, addressee_id, created_at DESC, id DESC);
-- One question at a time from one member to another.
CREATE UNIQUE INDEX checkin_requests_one_pending_key ON checkin_requests (tenant_id, requester_id, addressee_id)
    WHERE status = 'pending';
SELECT roost_protect_tenant_table('checkin_requests');

-- The expiries the schedulers claim across tenants: ids and times only, like checkin_deadlines.
CREATE TABLE checkin_request_expiries (
    request_id uuid PRIMARY KEY,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    due_at timestamptz NOT NULL,
    attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error text CHECK (length(last_error) <= 500),
    parked_at timestamptz
);
CREATE INDEX checkin_request_expiries_due_idx ON checkin_request_expiries (due_at) WHERE parked_at IS NULL;

-- What a user allows. Only what check-in requests need so far; the notification settings of
-- API.md "Outbound delivery" join it.
CREATE TABLE user_preferences (
    tenant_id uuid NOT NULL,
    user_id uuid NOT NULL,
    share_location_on_unanswered_request boolean NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, user_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
SELECT roost_protect_tenant_table('user_preferences');
