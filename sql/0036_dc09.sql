-- Alarm panels reporting over SIA DC-09 (issue #59, docs/BRIDGES.md "Alarm panels over DC-09").
-- A bridge may carry a DC-09 identity: the receiver number, line prefix and account number a
-- panel puts in each frame, and the AES key it encrypts with (NULL: the panel sends plain
-- frames). The key must be kept to decrypt, so like a signing secret it is stored as issued,
-- under the bridge's row security. Every column is nullable: no table rewrite.
ALTER TABLE bridges
    ADD COLUMN dc09_receiver text CHECK (dc09_receiver ~ '^[0-9A-F]{0,6}$'),
    ADD COLUMN dc09_line text CHECK (dc09_line ~ '^[0-9A-F]{1,6}$'),
    ADD COLUMN dc09_account text CHECK (dc09_account ~ '^[0-9A-Za-z]{3,16}$'),
    ADD COLUMN dc09_key bytea CHECK (length(dc09_key) IN (16, 24, 32)),
    -- SIA's hold-up code HA read as duress (a silent alarm) rather than a hold-up alarm.
    ADD COLUMN dc09_hold_up_duress boolean NOT NULL DEFAULT false;

ALTER TABLE bridges ADD CONSTRAINT bridges_dc09_whole CHECK (
    (dc09_account IS NULL) = (dc09_line IS NULL) AND (dc09_account IS NULL) = (dc09_receiver IS NULL)
    AND (dc09_key IS NULL OR dc09_account IS NOT NULL));

-- The receiver reads a frame's identity before it knows the tenant: this index, deliberately
-- without row security, maps the identity to its tenant and bridge and holds nothing else
-- (identifiers a panel sends in clear, no key, no name). Its primary key makes an identity
-- unique across the deployment, so two tenants' installers reusing an account number cannot
-- cross: the second is refused when the bridge is made. A revoked bridge's row is deleted.
CREATE TABLE dc09_identities (
    receiver text NOT NULL,
    line text NOT NULL,
    account text NOT NULL,
    tenant_id uuid NOT NULL,
    bridge_id uuid NOT NULL,
    PRIMARY KEY (receiver, line, account),
    UNIQUE (tenant_id, bridge_id),
    FOREIGN KEY (tenant_id, bridge_id) REFERENCES bridges (tenant_id, id) ON DELETE CASCADE
);

-- The sequence numbers a panel's messages were taken under, for an hour: a panel resends a
-- message whose ACK it did not get, and the resend is acknowledged again and raises nothing.
-- Written in the transaction that applies the message, so an ACK lost after the commit finds
-- it here. At most one row per sequence number (0000-9999) per bridge.
CREATE TABLE dc09_seen (
    tenant_id uuid NOT NULL,
    bridge_id uuid NOT NULL,
    sequence text NOT NULL CHECK (sequence ~ '^[0-9A-Fa-f]{4}$'),
    seen_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, bridge_id, sequence),
    FOREIGN KEY (tenant_id, bridge_id) REFERENCES bridges (tenant_id, id) ON DELETE CASCADE
);
SELECT roost_protect_tenant_table('dc09_seen');
