import Foundation

/// What an account's export (`GET /v1/me/export`) reads, in a tenant transaction whose viewer
/// is the account (so nothing hidden from them is exported): the long lists a page at a time by
/// keyset, each row already JSON text, so the export never holds more than a page.
public struct ExportStore: Sendable {
    public init() {}

    /// The groups the user is in: `{group_id, name, role, joined_at}`.
    public func memberships(of user: UUID, on connection: PostgresConnection) throws -> [String] {
        try connection.query("""
            SELECT jsonb_build_object('group_id', g.id, 'name', g.name, 'role', m.role,
                                      'joined_at', to_char(m.joined_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text AS json
            FROM memberships m JOIN groups g ON g.tenant_id = m.tenant_id AND g.id = m.group_id
            WHERE m.user_id = \(user) ORDER BY m.joined_at, g.id
            """).rows.map { try $0.decode(String.self, "json") }
    }

    /// A page of the messages the user wrote, as the API shows them, by group and seq after
    /// `after`: the items joined with commas (one string, built by PostgreSQL), how many, and
    /// where the page ends.
    public func messages(authoredBy user: UUID, after: (group: UUID, seq: Int64)?, limit: Int, on connection: PostgresConnection) throws
        -> (items: String, count: Int, last: (group: UUID, seq: Int64)?)
    {
        let row = try connection.query("""
            WITH page AS (
                SELECT m.group_id, m.seq, \(unsafeRaw: MessageStore.messageJSON) AS json FROM messages m \(unsafeRaw: MessageStore.messageJoins)
                WHERE m.author_type = 'user' AND m.author_id = \(user)
                  AND (\(after?.group)::uuid IS NULL OR (m.group_id, m.seq) > (\(after?.group)::uuid, \(after?.seq)::int8))
                ORDER BY m.group_id, m.seq LIMIT \(limit))
            SELECT coalesce(string_agg(json, ',' ORDER BY group_id, seq), '') AS items, count(*) AS n,
                   (SELECT group_id FROM page ORDER BY group_id DESC, seq DESC LIMIT 1) AS last_group,
                   (SELECT seq FROM page ORDER BY group_id DESC, seq DESC LIMIT 1) AS last_seq
            FROM page
            """).rows[0]
        let last = try row.decode(UUID?.self, "last_group").flatMap { group in try row.decode(Int64?.self, "last_seq").map { (group, $0) } }
        return (try row.decode(String.self, "items"), try row.decode(Int.self, "n"), last)
    }

    /// A page of the user's uploads by id after `after`: `{id, content_type, bytes, sha256, width,
    /// height, created_at, expires_at, url}` (the signed URL downloads it for about an hour).
    public func media(of user: UUID, after: UUID?, limit: Int, on connection: PostgresConnection) throws -> [(id: UUID, json: String)] {
        try connection.query("""
            SELECT md.id, (\(unsafeRaw: MediaStore.attachmentObject) || jsonb_build_object('sha256', encode(mb.sha256, 'hex'),
                   'created_at', to_char(md.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                   'expires_at', to_char(md.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))::text AS json
            FROM media md JOIN media_blobs mb ON mb.tenant_id = md.tenant_id AND mb.id = md.blob_id
            WHERE md.uploader_type = 'user' AND md.uploader_id = \(user) AND (\(after)::uuid IS NULL OR md.id > \(after))
            ORDER BY md.id LIMIT \(limit)
            """).rows.map { (try $0.decode(UUID.self, "id"), try $0.decode(String.self, "json")) }
    }

    /// The user's answers to alerts: `{group_id, seq, response, note, at}`, by group and seq.
    public func answers(of user: UUID, after: (group: UUID, seq: Int64)?, limit: Int, on connection: PostgresConnection) throws
        -> [(group: UUID, seq: Int64, json: String)]
    {
        try connection.query("""
            SELECT group_id, seq, jsonb_build_object('group_id', group_id, 'seq', seq, 'response', response, 'note', note,
                                                     'at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text AS json
            FROM alert_acks
            WHERE user_id = \(user) AND (\(after?.group)::uuid IS NULL OR (group_id, seq) > (\(after?.group)::uuid, \(after?.seq)::int8))
            ORDER BY group_id, seq LIMIT \(limit)
            """).rows.map { (try $0.decode(UUID.self, "group_id"), try $0.decode(Int64.self, "seq"), try $0.decode(String.self, "json")) }
    }
}
