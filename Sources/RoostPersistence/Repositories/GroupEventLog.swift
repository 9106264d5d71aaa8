import Foundation

/// A JSON document passed through as text (already encoded by the caller).
public struct RawJSON: PostgresEncodable, Sendable {
    public let text: String
    public init(_ text: String) { self.text = text }
    public static var postgresType: PostgresType { .jsonb }
    public func postgresText() -> String? { text }
}

/// One event as the stream sends it (`at` already RFC 3339, `data` JSON text).
public struct StreamEvent: Sendable, Equatable {
    public let group: UUID
    public let seq: Int64
    public let event: String
    public let at: String
    public let data: String

    public init(group: UUID, seq: Int64, event: String, at: String, data: String) {
        self.group = group
        self.seq = seq
        self.event = event
        self.at = at
        self.data = data
    }
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

    /// `subject`: the member a membership event is about, carried in the notification so a
    /// node can start (or stop) that member's streams on the group without reading the event.
    @discardableResult
    public func append(
        tenant: UUID, group: UUID, event: String, actorType: String?, actorID: UUID?, data: RawJSON, subject: UUID? = nil,
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
        try Self.notify(Self.eventPayload(tenant: tenant, group: group, seq: seq, subject: subject), on: connection)
        return AppendedEvent(tenant: tenant, group: group, seq: seq, at: at)
    }

    /// Replaces an event's data in the appending transaction (for data that can only be built
    /// once the event's projections are written, such as a message with its seq).
    public func setData(group: UUID, seq: Int64, data: RawJSON, on connection: PostgresConnection) throws {
        try connection.query("UPDATE group_events SET data = \(data) WHERE group_id = \(group) AND seq = \(seq)")
    }

    // MARK: - Notifications between nodes
    //
    // One channel carries every kind of notice, so each node needs a single LISTEN whatever it
    // serves. Payloads (all ids lower-case):
    //   "<tenant>/<group>/<seq>"        an event was appended
    //   "<tenant>/<group>/<seq>/<user>" a membership event about that user
    //   "g/<tenant>/<group>"            a group was deleted
    //   "s/<tenant>/<token hash hex>"   a session ended (logout)
    //   "u/<tenant>/<user>"             an account ended (deletion): every session of it

    public static func eventPayload(tenant: UUID, group: UUID, seq: Int64, subject: UUID? = nil) -> String {
        "\(tenant.uuidString.lowercased())/\(group.uuidString.lowercased())/\(seq)" + (subject.map { "/" + $0.uuidString.lowercased() } ?? "")
    }

    /// Sends a notice on the channel; PostgreSQL delivers it when (and only if) the transaction commits.
    public static func notify(_ payload: String, on connection: PostgresConnection) throws {
        try connection.query("SELECT pg_notify(\(channel), \(payload))")
    }

    /// Events after `seq`, oldest first, with their time as RFC 3339 text, ready to be framed
    /// for the stream without another round of date formatting.
    public func streamEvents(group: UUID, after seq: Int64, through last: Int64? = nil, limit: Int, on connection: PostgresConnection)
        throws -> [StreamEvent]
    {
        try connection.query("""
            SELECT seq, event, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at, data::text AS data
            FROM group_events
            WHERE group_id = \(group) AND seq > \(seq) AND (\(last)::bigint IS NULL OR seq <= \(last)) ORDER BY seq LIMIT \(limit)
            """).rows.map {
            StreamEvent(group: group, seq: try $0.decode(Int64.self, "seq"), event: try $0.decode(String.self, "event"),
                        at: try $0.decode(String.self, "at"), data: try $0.decode(String.self, "data"))
        }
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
