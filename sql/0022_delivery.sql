-- Delivery (API.md "Outbound delivery"): rendered email and Web Push need the tenant's
-- language, push preferences and quiet hours, the member a delivery is for, Web Push
-- subscriptions and the server's VAPID key.

-- The language of the tenant's rendered messages (templates/<locale>/).
ALTER TABLE tenants ADD COLUMN locale text NOT NULL DEFAULT 'en' CHECK (locale ~ '^[a-z]{2}$');

-- Whom a delivery is for when it is a member (pushes, a red alert's email fallback): their
-- preferences and quiet hours are read when it is sent. NULL for an address outside Roost.
ALTER TABLE outbox ADD COLUMN user_id uuid;
CREATE INDEX outbox_user_idx ON outbox (tenant_id, user_id) WHERE user_id IS NOT NULL;

-- A Web Push device keeps its subscription's keys (RFC 8291): `token` is the endpoint. Web Push
-- devices registered before this (an opaque token for a gateway) have none and still go to the
-- webhook; new ones always have them (the API requires the subscription).
ALTER TABLE devices ADD COLUMN p256dh bytea CHECK (length(p256dh) = 65);
ALTER TABLE devices ADD COLUMN auth bytea CHECK (length(auth) = 16);
ALTER TABLE devices ADD CONSTRAINT devices_webpush_keys
    CHECK ((p256dh IS NULL) = (auth IS NULL) AND (p256dh IS NULL OR platform = 'webpush'));

-- What a member wants pushed, and when to be left alone (red alerts and check-in prompts come
-- through quiet hours); with fallback on, a red alert reaches a member without a working
-- device by email or SMS.
ALTER TABLE user_preferences
    ADD COLUMN push_chat boolean NOT NULL DEFAULT false,
    ADD COLUMN push_amber boolean NOT NULL DEFAULT true,
    ADD COLUMN push_red boolean NOT NULL DEFAULT true,
    ADD COLUMN push_responses boolean NOT NULL DEFAULT true,
    ADD COLUMN quiet_start time,
    ADD COLUMN quiet_end time,
    ADD COLUMN quiet_time_zone text,
    ADD COLUMN fallback_email boolean NOT NULL DEFAULT true,
    ADD COLUMN fallback_sms boolean NOT NULL DEFAULT true,
    ADD CONSTRAINT user_preferences_quiet_hours
        CHECK ((quiet_start IS NULL) = (quiet_end IS NULL) AND (quiet_start IS NULL) = (quiet_time_zone IS NULL));
-- Who wants chat pushes: looked up on every chat message, usually nobody.
CREATE INDEX user_preferences_push_chat_idx ON user_preferences (tenant_id, user_id) WHERE push_chat;

-- The server's VAPID key pair (RFC 8292), made at first start by whichever node gets there
-- first. The private key is AES-256-GCM-sealed under ROOST_SECRET_KEY when that is set.
CREATE TABLE vapid_keys (
    id integer PRIMARY KEY CHECK (id = 1),
    public_key bytea NOT NULL CHECK (length(public_key) = 65),
    private_key bytea NOT NULL,
    sealed boolean NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
