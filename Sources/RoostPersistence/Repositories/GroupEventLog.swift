import Foundation

/// A JSON document passed through as text (already encoded by the caller).
public struct RawJSON: PostgresEncodable, Sendable {
    public let text: String
    public init(_ text: String) { self.text = text }
    public static var postgresType: PostgresType { .jsonb }
    public func postgresText() -> String? { text }
}

/// One appended event: its group, its place in the group's log, and when it happened.
public struct AppendedEvent: Sendable, Equatable {
    public let tenant: UUID
    public let group: UUID
    public let seq: Int64
    public let at: Date
}

/// The one way events are written (DESIGN.md "How a request flows", step 3). In the caller's
/// tenant transaction it takes the group's next `seq` (`UPDATE ... RETURNING`, which also
/// serialises writers of one group), inserts the event, and notifies channel `roost_events`;
/// PostgreSQL delivers the notification only if the transaction commits, so no node ever
/// pushes an event that was rolled back, and the log has no gaps.
public struct GroupEventLog: Sendable {
    /// The LISTEN/NOTIFY channel between nodes; the payload is `tenant/group/seq`.
    public static let channel = "roost_events"

    public init() {}

    @discardableResult
    public func append(
        tenant: UUID, group: UUID, event: String, actorType: String?, actorID: UUID?, data: RawJSON,
        on connection: PostgresConnection
    ) throws -> AppendedEvent {
        guard let next = try connection.query("""
            UPDATE groups SET last_seq = last_seq + 1 WHERE id = \(group) RETURNING last_seq
            """).first else {
            throw DatabaseError(.client, "group \(group) does not exist in this tenant")
        }
        let seq = try next.decode(Int64.self, "last_seq")
        let at = try connection.query("""
            INSERT INTO group_events (tenant_id, group_id, seq, event, actor_type, actor_id, data)
            VALUES (\(tenant), \(group), \(seq), \(event), \(actorType), \(actorID), \(data))
            RETURNING created_at
            """).rows[0].decode(Date.self, "created_at")
        let payload = "\(tenant.uuidString.lowercased())/\(group.uuidString.lowercased())/\(seq)"
        try connection.query("SELECT pg_notify(\(Self.channel), \(payload))")
        return AppendedEvent(tenant: tenant, group: group, seq: seq, at: at)
    }

    /// Events after `seq`, oldest first (resume over REST and over the stream).
    public func events(group: UUID, after seq: Int64, limit: Int, on connection: PostgresConnection)
        throws -> [(seq: Int64, event: String, at: Date, data: String)]
    {
        try connection.query("""
            SELECT seq, event, created_at, data::text AS data FROM group_events
            WHERE group_id = \(group) AND seq > \(seq) ORDER BY seq LIMIT \(limit)
            """).rows.map {
            (try $0.decode(Int64.self, "seq"), try $0.decode(String.self, "event"), try $0.decode(Date.self, "created_at"),
             try $0.decode(String.self, "data"))
        }
    }
}
