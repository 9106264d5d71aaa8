-- Media (API.md "Media"): uploads stored in PostgreSQL, so nodes keep no files and a backup
-- holds everything. The bytes (already stripped of metadata) are a blob of 256 KiB chunk rows,
-- stored once per tenant however many uploads share them; an upload (`media`) names its blob,
-- its uploader, and until it is linked into a message, when it expires.

CREATE TABLE media_blobs (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id uuid NOT NULL,
    -- NULL while the bytes are being written; set once, when they are complete.
    sha256 bytea CHECK (length(sha256) = 32),
    bytes bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0),
    content_type text NOT NULL CHECK (content_type IN ('image/jpeg', 'image/png', 'image/webp', 'application/pdf')),
    width integer CHECK (width > 0),
    height integer CHECK (height > 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX media_blobs_sha256_key ON media_blobs (tenant_id, sha256) WHERE sha256 IS NOT NULL;
SELECT roost_protect_tenant_table('media_blobs');

CREATE TABLE media_chunks (
    tenant_id uuid NOT NULL,
    blob_id uuid NOT NULL,
    n integer NOT NULL CHECK (n >= 0),
    data bytea NOT NULL CHECK (length(data) BETWEEN 1 AND 262144),
    PRIMARY KEY (tenant_id, blob_id, n),
    FOREIGN KEY (tenant_id, blob_id) REFERENCES media_blobs (tenant_id, id) ON DELETE CASCADE
);
SELECT roost_protect_tenant_table('media_chunks');

CREATE TABLE media (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    blob_id uuid NOT NULL,
    uploader_type text NOT NULL CHECK (uploader_type IN ('user', 'bridge')),
    uploader_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- Set while the upload is linked into no message; NULL once it is.
    expires_at timestamptz,
    PRIMARY KEY (tenant_id, id),
    -- A blob goes only when no upload names it (below), or with its tenant.
    FOREIGN KEY (tenant_id, blob_id) REFERENCES media_blobs (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX media_blob_idx ON media (tenant_id, blob_id);
-- "My pending uploads" (at most 20).
CREATE INDEX media_pending_idx ON media (tenant_id, uploader_id) WHERE expires_at IS NOT NULL;
SELECT roost_protect_tenant_table('media');

-- Where an upload is linked: a message (hence a group), in the message's attachment order.
CREATE TABLE media_links (
    tenant_id uuid NOT NULL,
    group_id uuid NOT NULL,
    seq bigint NOT NULL,
    media_id uuid NOT NULL,
    position smallint NOT NULL CHECK (position BETWEEN 0 AND 3),
    PRIMARY KEY (tenant_id, group_id, seq, media_id),
    FOREIGN KEY (tenant_id, group_id, seq) REFERENCES messages (tenant_id, group_id, seq) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, media_id) REFERENCES media (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX media_links_media_idx ON media_links (tenant_id, media_id);
SELECT roost_protect_tenant_table('media_links');

-- The bytes a tenant stores (complete blobs only), against ROOST_TENANT_MEDIA_QUOTA_MB.
CREATE TABLE media_usage (
    tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    bytes bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0)
);
SELECT roost_protect_tenant_table('media_usage');

-- Media follow their links: an upload that loses its last link (the message redacted or
-- purged, the group deleted) goes; a blob no upload names goes, and its bytes leave the
-- tenant's usage. Triggers, so every path that deletes (cascades included) keeps this true.
CREATE FUNCTION roost_media_unlinked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM media m WHERE m.tenant_id = OLD.tenant_id AND m.id = OLD.media_id AND m.expires_at IS NULL
        AND NOT EXISTS (SELECT 1 FROM media_links l WHERE l.tenant_id = OLD.tenant_id AND l.media_id = OLD.media_id);
    RETURN NULL;
END $$;
CREATE TRIGGER media_links_unlinked AFTER DELETE ON media_links FOR EACH ROW EXECUTE FUNCTION roost_media_unlinked();

CREATE FUNCTION roost_media_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM media_blobs b WHERE b.tenant_id = OLD.tenant_id AND b.id = OLD.blob_id
        AND NOT EXISTS (SELECT 1 FROM media m WHERE m.tenant_id = OLD.tenant_id AND m.blob_id = OLD.blob_id);
    RETURN NULL;
END $$;
CREATE TRIGGER media_deleted AFTER DELETE ON media FOR EACH ROW EXECUTE FUNCTION roost_media_deleted();

CREATE FUNCTION roost_media_blob_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.sha256 IS NOT NULL THEN
        UPDATE media_usage SET bytes = greatest(bytes - OLD.bytes, 0) WHERE tenant_id = OLD.tenant_id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER media_blobs_deleted AFTER DELETE ON media_blobs FOR EACH ROW EXECUTE FUNCTION roost_media_blob_deleted();

-- An upload's expiry (24 h unlinked), or an interrupted upload's leftover bytes: ids and times.
CREATE TABLE media_expiries (
    media_id uuid PRIMARY KEY,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    due_at timestamptz NOT NULL,
    attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error text CHECK (length(last_error) <= 500),
    parked_at timestamptz
);
CREATE INDEX media_expiries_due_idx ON media_expiries (due_at) WHERE parked_at IS NULL;

-- The key signing attachment URLs: HMAC-SHA256 with its key's two padded forms kept (key XOR
-- 0x36.., key XOR 0x5c..), so PostgreSQL signs the URLs it writes into message JSON with
-- sha256() alone and every node verifies them alike. 244 random bits, from two v4 UUIDs.
CREATE TABLE media_url_key (
    id integer PRIMARY KEY CHECK (id = 1),
    inner_pad bytea NOT NULL CHECK (length(inner_pad) = 64),
    outer_pad bytea NOT NULL CHECK (length(outer_pad) = 64)
);
DO $$
DECLARE
    key bytea := decode(replace(gen_random_uuid()::text, '-', '') || replace(gen_random_uuid()::text, '-', '') || repeat('00', 32), 'hex');
    inner_pad bytea := key;
    outer_pad bytea := key;
BEGIN
    FOR n IN 0..63 LOOP
        inner_pad := set_byte(inner_pad, n, get_byte(key, n) # 54);
        outer_pad := set_byte(outer_pad, n, get_byte(key, n) # 92);
    END LOOP;
    INSERT INTO media_url_key (id, inner_pad, outer_pad) VALUES (1, inner_pad, outer_pad);
END $$;
