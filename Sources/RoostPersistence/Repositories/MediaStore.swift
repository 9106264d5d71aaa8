import Foundation
import RoostProtocol

/// An upload as the API shows it.
public struct MediaRecord: Sendable, Equatable {
    public let id: UUID
    public let blob: UUID
    public let contentType: String
    public let bytes: Int
    public let sha256: [UInt8]
    public let width: Int?
    public let height: Int?
    /// Nil once linked into a message.
    public let expiresAt: Date?
}

/// Who may download: a member (or the uploader), or a bridge (its group's media, or its own).
public enum MediaViewer: Sendable {
    case user(UUID)
    case bridge(UUID, group: UUID)
}

/// Media (sql/0021_media.sql) in a tenant transaction: blobs written a chunk at a time, uploads,
/// their links into messages, downloads, and the expiry of what was never linked.
public struct MediaStore: Sendable {
    public static let chunkBytes = 256 * 1024
    public static let pendingLifetime: TimeInterval = 86_400

    public init() {}

    /// A blob whose bytes are about to be written, with the job that removes them if the
    /// upload never completes (and, once it does, its upload if never linked).
    public func beginBlob(tenant: UUID, id: UUID, contentType: String, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO media_blobs (tenant_id, id, content_type) VALUES (\(tenant), \(id), \(contentType))
            """)
        try connection.query("""
            INSERT INTO media_expiries (media_id, tenant_id, due_at) VALUES (\(id), \(tenant), now() + \(Self.pendingLifetime) * interval '1 second')
            """)
    }

    public func appendChunk(tenant: UUID, blob: UUID, index: Int, data: [UInt8], on connection: PostgresConnection) throws {
        try connection.query("INSERT INTO media_chunks (tenant_id, blob_id, n, data) VALUES (\(tenant), \(blob), \(index), \(Data(data)))")
    }

    /// Removes an upload's bytes that will never complete.
    public func abandon(blob: UUID, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM media_blobs WHERE id = \(blob) AND sha256 IS NULL")
        try connection.query("DELETE FROM media_expiries WHERE media_id = \(blob)")
    }

    /// The bytes and usage the tenant has, and how many uploads `uploader` has waiting to be linked.
    /// The tenant's bytes in use, the uploader's own (each of their distinct blobs once), and
    /// their uploads waiting to be linked.
    public func standing(tenant: UUID, uploaderType: String, uploader: UUID, on connection: PostgresConnection)
        throws -> (usedBytes: Int, uploaderBytes: Int, pending: Int)
    {
        let row = try connection.query("""
            SELECT coalesce((SELECT bytes FROM media_usage WHERE tenant_id = \(tenant)), 0) AS used,
                   coalesce((SELECT sum(mb.bytes) FROM media_blobs mb
                             WHERE mb.tenant_id = \(tenant) AND mb.id IN (SELECT blob_id FROM media
                                                                       WHERE uploader_type = \(uploaderType) AND uploader_id = \(uploader))), 0) AS own,
                   (SELECT count(*) FROM media WHERE uploader_id = \(uploader) AND expires_at IS NOT NULL) AS pending
            """).rows[0]
        return (try row.decode(Int.self, "used"), try row.decode(Int.self, "own"), try row.decode(Int.self, "pending"))
    }

    public enum Finish: Sendable, Equatable {
        case stored(MediaRecord)
        case overQuota
    }

    /// Completes an upload whose chunks are all written: the patch applied, the hash taken (by
    /// PostgreSQL over the stored chunks when `sha256` is nil), the bytes shared with an
    /// identical blob of the tenant if there is one, the tenant's usage counted against
    /// `quota`, and the upload made, pending for a day. A concurrent identical upload that
    /// won the hash's unique key surfaces as `uniqueViolation`: run it again.
    public func finish(tenant: UUID, blob: UUID, uploaderType: String, uploader: UUID, bytes: Int, width: Int?, height: Int?,
                       sha256: [UInt8]?, patch: (offset: Int, bytes: [UInt8])?, quota: Int, forAlert: Bool = false,
                       on connection: PostgresConnection) throws -> Finish {
        if let patch {
            try connection.query("""
                UPDATE media_chunks SET data = overlay(data PLACING \(Data(patch.bytes)) FROM \(patch.offset + 1)::integer) WHERE blob_id = \(blob) AND n = 0
                """)
        }
        let hash: [UInt8]
        if let sha256 {
            hash = sha256
        } else {
            hash = Array(try connection.query("""
                SELECT sha256(string_agg(data, ''::bytea ORDER BY n)) AS hash FROM media_chunks WHERE blob_id = \(blob)
                """).rows[0].decode(Data.self, "hash"))
        }
        var stored = blob
        if let existing = try connection.query("SELECT id FROM media_blobs WHERE sha256 = \(Data(hash))").first?.decode(UUID.self, "id") {
            try connection.query("DELETE FROM media_blobs WHERE id = \(blob)")
            stored = existing
        } else {
            try connection.query("""
                UPDATE media_blobs SET sha256 = \(Data(hash)), bytes = \(bytes), width = \(width), height = \(height) WHERE id = \(blob)
                """)
            let counted = try connection.query("""
                INSERT INTO media_usage AS u (tenant_id, bytes) SELECT \(tenant), \(bytes) WHERE \(bytes) <= \(quota)
                ON CONFLICT (tenant_id) DO UPDATE SET bytes = u.bytes + excluded.bytes WHERE u.bytes + excluded.bytes <= \(quota)
                RETURNING bytes
                """).first
            if counted == nil { return .overQuota }
        }
        let row = try connection.query("""
            INSERT INTO media (tenant_id, id, blob_id, uploader_type, uploader_id, expires_at, for_alert)
            VALUES (\(tenant), \(blob), \(stored), \(uploaderType), \(uploader), now() + \(Self.pendingLifetime) * interval '1 second', \(forAlert))
            RETURNING id
            """).rows[0]
        return .stored(try record(try row.decode(UUID.self, "id"), on: connection)!)
    }

    /// An upload by its id, whoever may see it (callers check).
    public func record(_ id: UUID, on connection: PostgresConnection) throws -> MediaRecord? {
        try connection.query("""
            SELECT m.id, m.blob_id, b.content_type, b.bytes, b.sha256, b.width, b.height, m.expires_at
            FROM media m JOIN media_blobs b ON b.tenant_id = m.tenant_id AND b.id = m.blob_id WHERE m.id = \(id)
            """).first.map {
            MediaRecord(id: try $0.decode(UUID.self, "id"), blob: try $0.decode(UUID.self, "blob_id"),
                        contentType: try $0.decode(String.self, "content_type"), bytes: try $0.decode(Int.self, "bytes"),
                        sha256: Array(try $0.decode(Data.self, "sha256")), width: try $0.decode(Int?.self, "width"),
                        height: try $0.decode(Int?.self, "height"), expiresAt: try $0.decode(Date?.self, "expires_at"))
        }
    }

    /// The upload if `viewer` may download it: its uploader, a member of a group it is linked
    /// into, or a bridge of such a group; nil otherwise (and for no such upload).
    public func visible(_ id: UUID, to viewer: MediaViewer, on connection: PostgresConnection) throws -> MediaRecord? {
        let allowed: Bool
        switch viewer {
        case .user(let user):
            allowed = try connection.query("""
                SELECT 1 FROM media m WHERE m.id = \(id) AND ((m.uploader_type = 'user' AND m.uploader_id = \(user)) OR EXISTS (
                    SELECT 1 FROM media_links l JOIN memberships s ON s.tenant_id = l.tenant_id AND s.group_id = l.group_id AND s.user_id = \(user)
                    WHERE l.tenant_id = m.tenant_id AND l.media_id = m.id))
                """).first != nil
        case .bridge(let bridge, let group):
            allowed = try connection.query("""
                SELECT 1 FROM media m WHERE m.id = \(id) AND ((m.uploader_type = 'bridge' AND m.uploader_id = \(bridge)) OR EXISTS (
                    SELECT 1 FROM media_links l WHERE l.tenant_id = m.tenant_id AND l.media_id = m.id AND l.group_id = \(group)))
                """).first != nil
        }
        return allowed ? try record(id, on: connection) : nil
    }

    /// The stored chunk `index` of a blob.
    public func chunk(blob: UUID, index: Int, on connection: PostgresConnection) throws -> [UInt8]? {
        try connection.query("SELECT data FROM media_chunks WHERE blob_id = \(blob) AND n = \(index)").first.map { Array(try $0.decode(Data.self, "data")) }
    }

    /// The `attachments` of a message about to be posted, as its JSON shows them, when every id
    /// is an upload of the poster's; nil when one is not.
    /// Uploads made for an alert go only into alerts (`intoAlert`).
    public func attachmentsJSON(_ ids: [UUID], uploaderType: String, uploader: UUID, intoAlert: Bool = true,
                                on connection: PostgresConnection) throws -> String? {
        guard !ids.isEmpty else { return "[]" }
        let row = try connection.query("""
            SELECT count(*) AS found, coalesce(jsonb_agg(\(unsafeRaw: Self.attachmentObject) ORDER BY x.position), '[]'::jsonb)::text AS json
            FROM unnest(\(ids)::uuid[]) WITH ORDINALITY AS x(id, position)
            JOIN media md ON md.id = x.id AND md.uploader_type = \(uploaderType) AND md.uploader_id = \(uploader) AND (\(intoAlert) OR NOT md.for_alert)
            JOIN media_blobs mb ON mb.tenant_id = md.tenant_id AND mb.id = md.blob_id
            """).rows[0]
        return try row.decode(Int.self, "found") == Set(ids).count ? try row.decode(String.self, "json") : nil
    }

    /// Links uploads into a message (in the given order): visible to the group's members from
    /// now on, and no longer pending.
    public func link(_ ids: [UUID], tenant: UUID, group: UUID, seq: Int64, on connection: PostgresConnection) throws {
        guard !ids.isEmpty else { return }
        try connection.query("""
            INSERT INTO media_links (tenant_id, group_id, seq, media_id, position)
            SELECT \(tenant), \(group), \(seq), x.id, x.position - 1 FROM unnest(\(ids)::uuid[]) WITH ORDINALITY AS x(id, position)
            """)
        try connection.query("UPDATE media SET expires_at = NULL WHERE id = ANY(\(ids)::uuid[]) AND expires_at IS NOT NULL")
        try connection.query("DELETE FROM media_expiries WHERE media_id = ANY(\(ids)::uuid[])")
    }

    /// Removes a message's attachments (redaction): uploads linked nowhere else go with them.
    public func unlink(group: UUID, seq: Int64, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM media_links WHERE group_id = \(group) AND seq = \(seq)")
    }

    /// One attachment in message JSON: `md` is the upload, `mb` its blob; `url` is signed for
    /// an hour (rounded to the minute, so a page read twice in a minute is cached alike).
    static let attachmentObject = """
        jsonb_build_object('id', md.id, 'content_type', mb.content_type, 'bytes', mb.bytes, 'width', mb.width, 'height', mb.height,
            'url', (SELECT '/v1/media/' || md.id || '?tenant=' || md.tenant_id || '&exp=' || e.exp || '&sig='
                        || encode(sha256(k.outer_pad || sha256(k.inner_pad || convert_to(md.tenant_id || '.' || md.id || '.' || e.exp, 'UTF8'))), 'hex')
                    FROM media_url_key k, (SELECT (floor(extract(epoch FROM now()) / 60)::bigint + 60) * 60 AS exp) e))
        """

    /// A message's `attachments` as jsonb (`m` is the messages row).
    static let attachmentsOfMessage = """
        coalesce((SELECT jsonb_agg(\(attachmentObject) ORDER BY l.position)
                  FROM media_links l JOIN media md ON md.tenant_id = l.tenant_id AND md.id = l.media_id
                  JOIN media_blobs mb ON mb.tenant_id = md.tenant_id AND mb.id = md.blob_id
                  WHERE l.tenant_id = m.tenant_id AND l.group_id = m.group_id AND l.seq = m.seq), '[]'::jsonb)
        """

    /// The URL-signing key's pads (`media_url_key`), for checking a signed URL.
    public func urlKey(on connection: PostgresConnection) throws -> (inner: [UInt8], outer: [UInt8]) {
        let row = try connection.query("SELECT inner_pad, outer_pad FROM media_url_key WHERE id = 1").rows[0]
        return (Array(try row.decode(Data.self, "inner_pad")), Array(try row.decode(Data.self, "outer_pad")))
    }

    // MARK: - Expiry

    /// An upload still unlinked at its expiry goes, and so do the bytes of one never completed;
    /// true when something went.
    public func expire(_ id: UUID, on connection: PostgresConnection) throws -> Bool {
        let uploads = try connection.query("DELETE FROM media WHERE id = \(id) AND expires_at <= now()").affectedRows
        let blobs = try connection.query("DELETE FROM media_blobs WHERE id = \(id) AND sha256 IS NULL").affectedRows
        try connection.query("DELETE FROM media_expiries WHERE media_id = \(id)")
        return uploads + blobs > 0
    }
}
