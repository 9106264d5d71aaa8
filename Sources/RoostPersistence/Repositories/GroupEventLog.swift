import Foundation
import RoostProtocol

/// A JSON document passed through as text (already encoded by the caller).
public struct RawJSON: PostgresEncodable, Sendable {
    public let text: String
    public init(_ text: String) { self.text = text }
    public static var postgresType: PostgresType { .jsonb }
    public func postgresText() -> String? { text }
}

/// An event's data whose JSON names the event's own seq and time (a message carries both),
/// which only the appending statement learns: text with holes for them, filled by PostgreSQL
/// in that statement (`GroupEventLog.append(..., data:projections:answer:on:)`).
public struct EventDataText: Sendable {
    private enum Piece: Sendable {
        case text(String)
        /// The event's seq, as a JSON number.
        case seq
        /// The event's time as the API writes it, without quotes.
        case at
        /// JSON text the statement computes (a gated append's `gate.<column>`, encoded).
        case expression(SQLQuery)
    }

    private var pieces: [Piece] = []

    public init() {}

    /// Data that names neither its seq nor its time: no holes.
    public init(_ text: String) {
        pieces = [.text(text)]
    }

    public mutating func append(_ text: String) {
        if case .text(let last)? = pieces.last {
            pieces[pieces.count - 1] = .text(last + text)
        } else {
            pieces.append(.text(text))
        }
    }

    public mutating func appendSeq() { pieces.append(.seq) }
    public mutating func appendAt() { pieces.append(.at) }
    /// JSON text computed by the appending statement, e.g. `to_json(gate.display_name)::text`.
    public mutating func appendExpression(_ sql: SQLQuery) { pieces.append(.expression(sql)) }

    /// The SQL expression that fills the holes from columns `seq` and `at`.
    var assembled: SQLQuery {
        assembled { sql, text, _ in sql.appendInterpolation(text) }
    }

    /// The pieces of text between the holes, in order.
    var texts: [String] {
        pieces.compactMap { if case .text(let text) = $0 { text } else { nil } }
    }

    /// The same expression with its pieces of text read from `texts`, SQL for each piece in
    /// order (columns, for a statement that fills many events' data at once).
    func assembled(texts: [SQLQuery]) -> SQLQuery {
        precondition(texts.count == self.texts.count, "one SQL expression for each piece of text")
        return assembled { sql, _, index in sql.appendInterpolation(fragment: texts[index]) }
    }

    /// The expression, each piece of text (with its place among them) written by `text`.
    private func assembled(text: (inout SQLQuery.StringInterpolation, String, Int) -> Void) -> SQLQuery {
        guard !pieces.isEmpty else { return "''" }
        var sql = SQLQuery.StringInterpolation(literalCapacity: 16 * pieces.count, interpolationCount: pieces.count)
        var textIndex = 0
        for (index, piece) in pieces.enumerated() {
            if index > 0 { sql.appendLiteral(" || ") }
            switch piece {
            case .text(let piece):
                text(&sql, piece, textIndex)
                textIndex += 1
            case .seq: sql.appendLiteral("seq::text")
            case .at: sql.appendLiteral("at")
            case .expression(let expression): sql.appendInterpolation(fragment: expression)
            }
        }
        return SQLQuery(stringInterpolation: sql)
    }
}

/// One appended event: its group, its place in the group's log, and when it happened.
public struct AppendedEvent: Sendable, Equatable {
    public let tenant: UUID
    public let group: UUID
    public let seq: Int64
    public let at: Date
}

/// When an appended event's notice goes out on the channel.
public enum NoticeTiming: Sendable {
    /// In the appending transaction: PostgreSQL sends it as the transaction commits.
    case withCommit
    /// Just after the commit, in a transaction of its own: kept in the session by the appending
    /// statement, and sent in the same round trip when that statement commits (`committing`),
    /// else by the caller's `GroupEventLog.sendKeptNotice` once it has committed. PostgreSQL
    /// lets one notifying transaction commit at a time, holding a lock through its WAL flush,
    /// so busy groups' posts queue there; this one notifies without waiting for a flush. Its
    /// notice can be lost (the node gone between the two, a full notify queue): the fanout's
    /// audit (`FanoutHub.audit`) finds the group behind its log and reads it. Only for events
    /// whose order against group notices does not matter: chat posts, never membership.
    case afterCommit
}

/// The one way events are written (DESIGN.md "How a request flows", step 3). In the caller's
/// tenant transaction it takes the group's next `seq` (`UPDATE ... RETURNING`, which also
/// serialises writers of one group), inserts the event, and notifies channel `roost_events`;
/// PostgreSQL delivers the notification only if the transaction commits, so no node ever
/// pushes an event that was rolled back, and the log has no gaps. (`NoticeTiming.afterCommit`
/// sends it once the commit is done instead, which keeps both promises.)
public struct GroupEventLog: Sendable {
    /// The LISTEN/NOTIFY channel between nodes (`NodeNotice` owns what it carries).
    public static let channel = NodeNotice.channel

    public init() {}

    /// `subject`: the member a membership event is about, carried in the notification so a
    /// node can start (or stop) that member's streams on the group without reading the event.
    /// One statement: take the seq, insert the event, notify.
    @discardableResult
    public func append(
        tenant: UUID, group: UUID, event: GroupEventKind, actorType: ActorType?, actorID: UUID?, data: RawJSON, subject: UUID? = nil,
        hiddenFrom: UUID? = nil, on connection: PostgresConnection
    ) throws -> AppendedEvent {
        try append(tenant: tenant, group: group, event: event, actorType: actorType, actorID: actorID, subject: subject, hiddenFrom: hiddenFrom,
                   data: EventDataText(data.text), on: connection).event
    }

    /// Appends an event, with the caller's projections of it, in one statement: the seq is
    /// taken, PostgreSQL fills `data`'s holes (a message names its own seq and time), inserts
    /// and announces the event, and runs `projections`: further `WITH` items, each starting
    /// with a comma, that read the new event's `seq` and `created_at` from `appended`. With
    /// `committing`, the statement is the transaction's last and commits with it, in the same
    /// round trip (`PostgresConnection.queryAndCommit`), and `notice` says whether the event's
    /// notice goes with the commit or just after it. Returns the event and its data as text
    /// (the bytes the stream sends).
    @discardableResult
    public func append(
        tenant: UUID, group: UUID, event: GroupEventKind, actorType: ActorType?, actorID: UUID?, subject: UUID? = nil,
        hiddenFrom: UUID? = nil, data: EventDataText, projections: SQLQuery = "", committing: Bool = false,
        notice timing: NoticeTiming = .withCommit, on connection: PostgresConnection
    ) throws -> (event: AppendedEvent, data: String) {
        let afterCommit = timing == .afterCommit
        let statement = Self.appending(tenant: tenant, group: group, event: event, actorType: actorType, actorID: actorID, subject: subject,
                                       hiddenFrom: hiddenFrom, data: data, projections: projections, notifying: !afterCommit)
        let result = afterCommit && committing
            ? try connection.queryAndCommit(statement, then: Self.keptNotice).result : try connection.query(statement, committing: committing)
        guard let row = result.first else {
            throw DatabaseError(.client, "group \(group) does not exist in this tenant")
        }
        return (AppendedEvent(tenant: tenant, group: group, seq: try row.decode(Int64.self, "seq"), at: try row.decode(Date.self, "created_at")),
                try row.decode(String.self, "data"))
    }

    /// The statement that appends an event (`append`): it takes the seq, fills `data`'s holes,
    /// inserts the event, runs `projections` and notifies (`notifying`) or keeps the notice. With
    /// `gate`, a query whose one row admits the event (its columns readable in `data`'s
    /// expressions as `gate.<column>`), the statement appends nothing and returns no row when
    /// the gate finds none.
    static func appending(
        tenant: UUID, group: UUID, event: GroupEventKind, actorType: ActorType?, actorID: UUID?, subject: UUID?, hiddenFrom: UUID?,
        data: EventDataText, projections: SQLQuery, notifying: Bool, gate: SQLQuery? = nil
    ) -> SQLQuery {
        // The notice (with the event's frame, when it fits) is assembled by the same statement,
        // the only place the seq is known before the round trip ends, from the parts its
        // owners give: `NodeNotice` the header, `StreamEvent` the frame.
        let header = NodeNotice.eventHeaderParts(tenant: tenant, group: group, subject: subject, hiddenFrom: hiddenFrom)
        let frame = StreamEvent.frameParts(group: group, event: event)
        let admitted: SQLQuery = gate.map { "gate AS (\(fragment: $0)),\n" } ?? ""
        let admits: SQLQuery = gate == nil ? "" : " AND EXISTS (SELECT 1 FROM gate)"
        let readsGate: SQLQuery = gate == nil ? "" : " CROSS JOIN gate"
        return """
            WITH \(fragment: admitted)next AS (
                UPDATE group_seqs SET last_seq = last_seq + 1 WHERE group_id = \(group)\(fragment: admits)
                RETURNING last_seq AS seq, now() AS created_at, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at),
            filled AS (SELECT seq, created_at, at, \(fragment: data.assembled) AS data FROM next\(fragment: readsGate)),
            appended AS (
                INSERT INTO group_events (tenant_id, group_id, seq, event, actor_type, actor_id, data, subject, hidden_from, created_at)
                SELECT \(tenant), \(group), seq, \(event.name), \(actorType), \(actorID), data::jsonb, \(subject), \(hiddenFrom), created_at FROM filled
                RETURNING seq, created_at)
            \(fragment: projections),
            framed AS (
                SELECT seq, created_at, data, \(fragment: Self.framing(
                    header: ("\(header.beforeSeq)", "\(header.afterSeq)\(fragment: Self.audienceSuffix(group: group, hiddenFrom: hiddenFrom))"),
                    frame: ("\(frame.beforeSeq)", "\(frame.beforeAt)", "\(frame.beforeData)")))
                FROM filled)
            SELECT seq, created_at, data, \(fragment: notifying ? Self.send(notice) : Self.keep(notice)) AS notified
            FROM framed
            """
    }

    /// The columns `header` and `frame` of an event's notice, from SQL for the parts `NodeNotice`
    /// and `StreamEvent` give (`eventHeaderParts`, `frameParts`), reading columns `seq`, `at` and `data`.
    static func framing(header: (beforeSeq: SQLQuery, afterSeq: SQLQuery),
                        frame: (beforeSeq: SQLQuery, beforeAt: SQLQuery, beforeData: SQLQuery)) -> SQLQuery {
        """
        \(fragment: header.beforeSeq) || seq || \(fragment: header.afterSeq) AS header,
        \(fragment: frame.beforeSeq) || seq || \(fragment: frame.beforeAt) || at || \(fragment: frame.beforeData) || data || '}' AS frame
        """
    }

    /// The notice from columns `header` and `frame` (`framing`): the event's frame goes with its
    /// header when both fit in one notification, else the header alone (the node reads the event).
    private static let notice: SQLQuery = """
        CASE WHEN octet_length(header) + 1 + octet_length(frame) < \(NodeNotice.maxBytes) THEN header || E'\\n' || frame ELSE header END
        """

    /// `notice` sent on the channel, as the transaction commits.
    static let notified: SQLQuery = send(notice)

    /// For an event for the managers only, the notice header's last part: `/` and the group's
    /// owner and admins now, comma-separated (`NodeNotice`); nothing for any other event.
    private static func audienceSuffix(group: UUID, hiddenFrom: UUID?) -> SQLQuery {
        guard hiddenFrom == Audience.managersOnly else { return "" }
        return " || '/' || \(fragment: managersText(group: group))"
    }

    /// The group's owner and admins as comma-separated ids ('' for none), in SQL.
    private static func managersText(group: UUID) -> SQLQuery {
        """
        coalesce((SELECT string_agg(m.user_id::text, ',' ORDER BY m.user_id) FROM memberships m
                  WHERE m.group_id = \(group) AND m.role IN ('owner', 'admin')), '')
        """
    }

    /// The notice sent in the transaction, or, for `afterCommit`, kept in a session setting that
    /// outlives the commit (and, like any setting, is undone with a transaction that rolls back).
    private static func send(_ notice: SQLQuery) -> SQLQuery { "pg_notify(\(channel), \(fragment: notice))" }
    private static func keep(_ notice: SQLQuery) -> SQLQuery { "set_config('roost.notice', \(fragment: notice), false)" }
    /// The notice kept by the committed statement, sent in its own transaction, which needs no
    /// WAL flush (it writes nothing but its commit record), and cleared. Nothing is kept when
    /// the append failed, so a failed post sends nothing, or at most a repeat of an earlier,
    /// committed event's notice, which every node drops.
    private static let keptNotice: SQLQuery = """
        SELECT pg_notify(\(channel), current_setting('roost.notice')), set_config('roost.notice', '', false),
               set_config('synchronous_commit', 'off', true)
        WHERE current_setting('roost.notice', true) <> ''
        """

    /// Sends the notice an `afterCommit` append kept, once its transaction has committed (a
    /// failure only delays the event until the fanout's audit).
    public static func sendKeptNotice(on connection: PostgresConnection) throws {
        try connection.query(keptNotice)
    }

    /// Sends a stream notice (`{"type":"notice","event":..,"data":..}`) to one user's streams on every node.
    public static func notifyUser(tenant: UUID, user: UUID, event: NoticeKind, data: String, on connection: PostgresConnection) throws {
        try notify(.userNotice(tenant: tenant, user: user, frame: StreamFrameJSON.notice(event, data: data)), on: connection)
    }

    /// Sends a stream notice to the streams following a group, on every node (not logged: a
    /// stream that is not connected then never sees it).
    public static func notifyGroup(tenant: UUID, group: UUID, event: NoticeKind, data: String, hiddenFrom: UUID? = nil,
                                   on connection: PostgresConnection) throws {
        var audience: [UUID]?
        if hiddenFrom == Audience.managersOnly {
            audience = users(try connection.query("SELECT \(fragment: managersText(group: group)) AS ids").rows[0].decode(String.self, "ids"))
        }
        try notify(.groupNotice(tenant: tenant, group: group, hiddenFrom: hiddenFrom, audience: audience,
                                frame: StreamFrameJSON.notice(event, data: data)), on: connection)
    }

    private static func users(_ text: String?) -> [UUID]? {
        text.map { $0.split(separator: ",").compactMap { UUID(uuidString: String($0)) } }
    }

    /// Sends a notice on the channel; PostgreSQL delivers it when (and only if) the transaction commits.
    public static func notify(_ notice: NodeNotice, on connection: PostgresConnection) throws {
        try connection.query("SELECT pg_notify(\(channel), \(notice.payload))")
    }

    /// Events after `seq`, oldest first, with their time as RFC 3339 text, ready to be framed
    /// for the stream without another round of date formatting. Row security leaves out what
    /// is hidden from the transaction's viewer, when one is set (`setViewer`).
    public func streamEvents(group: UUID, after seq: Int64, through last: Int64? = nil, limit: Int, on connection: PostgresConnection)
        throws -> [StreamEvent]
    {
        try connection.query("""
            SELECT seq, event, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at, data::text AS data, subject, hidden_from,
                   CASE WHEN hidden_from = roost_managers_only() THEN \(fragment: Self.managersText(group: group)) END AS audience
            FROM group_events
            WHERE group_id = \(group) AND seq > \(seq) AND (\(last)::bigint IS NULL OR seq <= \(last)) ORDER BY seq LIMIT \(limit)
            """).rows.map { try Self.streamEvent($0, group: group, seq: try $0.decode(Int64.self, "seq")) }
    }

    private static func streamEvent(_ row: PostgresRow, group: UUID, seq: Int64) throws -> StreamEvent {
        StreamEvent(group: group, seq: seq, event: GroupEventKind(try row.decode(String.self, "event")),
                    at: try row.decode(String.self, "at"), data: try row.decode(String.self, "data"),
                    subject: try row.decode(UUID?.self, "subject"), hiddenFrom: try row.decode(UUID?.self, "hidden_from"),
                    audience: users(try row.decode(String?.self, "audience")))
    }

    /// A resume's page: `limit` events after `seq`, oldest first, as `streamEvents` reads them;
    /// or, when retention has purged events after `seq` (the cursor fell behind the group's
    /// first kept seq), `expired` with that seq. One statement, so one snapshot: a purge
    /// committing meanwhile is seen whole or not at all, never as a page with a hole.
    public func resumeEvents(group: UUID, after seq: Int64, limit: Int, on connection: PostgresConnection) throws -> ResumePage {
        let rows = try connection.query("""
            SELECT g.purged_through, e.seq, e.event, e.at, e.data, e.subject, e.hidden_from, e.audience FROM groups g LEFT JOIN LATERAL (
                SELECT seq, event, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at, data::text AS data, subject,
                       hidden_from, CASE WHEN hidden_from = roost_managers_only() THEN \(fragment: Self.managersText(group: group)) END AS audience
                FROM group_events WHERE group_id = g.id AND seq > \(seq) AND g.purged_through <= \(seq) ORDER BY seq LIMIT \(limit)
            ) e ON true
            WHERE g.id = \(group) ORDER BY e.seq
            """).rows
        guard let first = rows.first else { return .events([]) }
        let purgedThrough = try first.decode(Int64.self, "purged_through")
        guard purgedThrough <= seq else { return .expired(oldestSeq: purgedThrough + 1) }
        // A group with no events after the cursor is one row with the lateral's columns null.
        return .events(try rows.compactMap { row in try row.decode(Int64?.self, "seq").map { try Self.streamEvent(row, group: group, seq: $0) } })
    }

    /// Events after `seq`, oldest first, with their times as dates (for tests and tools to read back).
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

/// A resume's read of a group's log (`GroupEventLog.resumeEvents`).
public enum ResumePage: Sendable, Equatable {
    case events([StreamEvent])
    /// Events after the cursor were purged: the client reloads, and may resume from `oldestSeq - 1`.
    case expired(oldestSeq: Int64)
}
