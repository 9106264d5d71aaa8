import Foundation
import RoostProtocol

/// What a member posts (API.md "Messages and alerts"), already validated.
public struct NewMessage: Sendable {
    public var clientMessageID: String?
    /// The idempotency key of a message the server posts on its own behalf (a missed
    /// check-in's alert): a column of its own that no request can set, so nothing a client
    /// sends can collide with it (sql/0007_job_isolation.sql).
    public var systemKey: String?
    public var text: String
    public var kind: MessageKind
    public var severity: String?
    public var template: String?
    /// `{"lat":..,"lon":..,"accuracy_m":..}` as JSON text.
    public var location: String?
    public var replyTo: Int64?
    /// The one user the message (and every event about it) is hidden from: a duress alert's
    /// walker (sql/0016_checkin_pins_duress.sql), or a reply to such an alert.
    public var hiddenFrom: UUID?
    /// Uploads to link into the message, in order, and their `attachments` JSON
    /// (`MediaStore.attachmentsJSON`).
    public var attachments: (ids: [UUID], json: String) = ([], "[]")

    public init(clientMessageID: String?, systemKey: String? = nil, text: String, kind: MessageKind, severity: String?, template: String?,
                location: String?, replyTo: Int64?) {
        self.clientMessageID = clientMessageID
        self.systemKey = systemKey
        self.text = text
        self.kind = kind
        self.severity = severity
        self.template = template
        self.location = location
        self.replyTo = replyTo
    }
}

/// The message a reply names (`MessageStore.replyTarget`).
public struct ReplyTarget: Sendable {
    /// The member who raised it, when it is an alert a member raised.
    public let alertAuthor: UUID?
    /// Whom the message is hidden from (a reply to it is hidden from them too).
    public let hiddenFrom: UUID?
}

/// Messages, alerts, acknowledgements and templates, in a tenant transaction. Every change is
/// an event appended through `GroupEventLog` with its projections, in the caller's transaction.
public struct MessageStore: Sendable {
    public init() {}

    /// The API's `message` object as `jsonb`, built by PostgreSQL from the projections, so the
    /// event a post appends and every later read show the same shape. `m` is the messages row.
    static let messageObject = """
        jsonb_build_object(
            'id', m.id, 'group_id', m.group_id, 'seq', m.seq, 'kind', m.kind,
            'author', jsonb_build_object('type', m.author_type, 'id', m.author_id,
                                         'display_name', coalesce(u.display_name, b.name, f.name, m.author_type)),
            'text', m.text, 'template', m.template, 'location', m.location, 'reply_to', m.reply_to,
            'created_at', to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
            'client_msg_id', m.client_msg_id,
            'redacted', m.redacted_at IS NOT NULL,
            'attachments', \(MediaStore.attachmentsOfMessage),
            'alert', CASE WHEN a.seq IS NULL THEN NULL ELSE jsonb_build_object(
                'severity', a.severity, 'status', a.status,
                'opened_at', to_char(a.opened_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'closed_at', to_char(a.closed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'closed_by', CASE WHEN a.closed_by_type IS NULL THEN NULL
                                  ELSE jsonb_build_object('type', a.closed_by_type, 'id', a.closed_by, 'display_name', CASE a.closed_by_type
                                      WHEN 'user' THEN (SELECT cu.display_name FROM users cu WHERE cu.tenant_id = a.tenant_id AND cu.id = a.closed_by)
                                      WHEN 'bridge' THEN (SELECT cb.name FROM bridges cb WHERE cb.tenant_id = a.tenant_id AND cb.id = a.closed_by)
                                      WHEN 'feed' THEN (SELECT cf.name FROM cap_feeds cf WHERE cf.id = a.closed_by)
                                  END) END,
                'resolution', a.resolution, 'dedup_key', a.dedup_key, 'repeat_count', a.repeat_count, 'details', a.details,
                'escalation_level', a.escalation_level,
                'acks', coalesce((
                    SELECT jsonb_agg(jsonb_build_object(
                        'user_id', k.user_id, 'display_name', ku.display_name, 'response', k.response, 'note', k.note,
                        'at', to_char(k.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY k.at, k.user_id)
                    FROM alert_acks k LEFT JOIN users ku ON ku.tenant_id = k.tenant_id AND ku.id = k.user_id
                    WHERE k.tenant_id = a.tenant_id AND k.group_id = a.group_id AND k.seq = a.seq), '[]'::jsonb))
            END)
        """

    /// `messageObject` as JSON text.
    static let messageJSON = messageObject + "::text"

    static let messageJoins = """
        LEFT JOIN users u ON u.tenant_id = m.tenant_id AND u.id = m.author_id AND m.author_type = 'user'
        LEFT JOIN bridges b ON b.tenant_id = m.tenant_id AND b.id = m.author_id AND m.author_type = 'bridge'
        LEFT JOIN cap_feeds f ON f.id = m.author_id AND m.author_type = 'feed'
        LEFT JOIN alerts a ON a.tenant_id = m.tenant_id AND a.group_id = m.group_id AND a.seq = m.seq
        """

    /// One message as JSON text, or nil.
    public func message(group: UUID, seq: Int64, on connection: PostgresConnection) throws -> String? {
        try connection.query("""
            SELECT \(unsafeRaw: Self.messageJSON) AS json FROM messages m \(unsafeRaw: Self.messageJoins)
            WHERE m.group_id = \(group) AND m.seq = \(seq)
            """).first?.decode(String.self, "json")
    }

    /// The message an author already posted under this client id, if any.
    public func idempotent(group: UUID, author: UUID, clientMessageID: String, on connection: PostgresConnection) throws -> String? {
        try connection.query("""
            SELECT \(unsafeRaw: Self.messageJSON) AS json FROM messages m \(unsafeRaw: Self.messageJoins)
            WHERE \(fragment: Self.repeatCondition("m", group: "\(group)", author: "\(author)", clientMessageID: "\(clientMessageID)"))
            """).first?.decode(String.self, "json")
    }

    /// That `alias`, a row of `messages`, is the message `author` posted in `group` under
    /// `clientMessageID` (each an SQL expression): a lookup of the repeat key only
    /// (sql/0041_repeat_key_order.sql). The group is compared by IS NOT DISTINCT FROM (the same
    /// as `=` for a group, never NULL), which no index can use: were it `=`, the primary key's
    /// (tenant, group) prefix would be an equal road to the planner while `messages` has no
    /// statistics, and a generic plan that took it would read the group's every message.
    static func repeatCondition(_ alias: String, group: SQLQuery, author: SQLQuery, clientMessageID: SQLQuery) -> SQLQuery {
        """
        \(unsafeRaw: alias).author_id = \(fragment: author) AND \(unsafeRaw: alias).client_msg_id = \(fragment: clientMessageID)
        AND \(unsafeRaw: alias).group_id IS NOT DISTINCT FROM \(fragment: group)
        """
    }

    /// Whether the author already posted a message under this client id: a boolean SQL
    /// expression in which `author` is the author's id, for the round trip that opens the
    /// transaction to answer (a retry is rare; `idempotent` then reads the message).
    public func repeatQuestion(group: UUID, author: SQLQuery, clientMessageID: String) -> SQLQuery {
        Self.repeatQuestion(group: "\(group)", author: author, clientMessageID: "\(clientMessageID)")
    }

    /// The same, each an SQL expression.
    static func repeatQuestion(group: SQLQuery, author: SQLQuery, clientMessageID: SQLQuery) -> SQLQuery {
        "EXISTS (SELECT 1 FROM messages r WHERE \(fragment: repeatCondition("r", group: group, author: author, clientMessageID: clientMessageID)))"
    }

    /// Whether `seq` is a message of the group (for `reply_to`).
    public func exists(group: UUID, seq: Int64, on connection: PostgresConnection) throws -> Bool {
        try connection.query("SELECT 1 FROM messages WHERE group_id = \(group) AND seq = \(seq)").first != nil
    }

    /// Posts a message (and its alert) in one statement: the `message.created` event, whose
    /// data is the finished message (its seq and time filled in by the statement, so no read-back
    /// is needed), with the messages and alerts rows. A repeat of `client_msg_id` by the same
    /// author surfaces as `uniqueViolation`. `committing`: the caller runs nothing after this in
    /// its transaction, so the commit goes with the post's statement when that is the last
    /// (no attachments to link, no red alert's escalation to schedule), and a chat line's
    /// notice just after it.
    public func post(
        tenant: UUID, group: UUID, authorType: ActorType, authorID: UUID?, authorName: String, message: NewMessage,
        dedupKey: String? = nil, bridge: UUID? = nil, details: String? = nil, committing: Bool = false,
        on connection: PostgresConnection
    ) throws -> (seq: Int64, json: String) {
        let id = UUID()
        let escalates = message.kind == .alert && message.severity == AlertSeverity.red.name
        let commits = committing && message.attachments.ids.isEmpty && !escalates
        let (event, json) = try GroupEventLog().append(
            tenant: tenant, group: group, event: .messageCreated, actorType: authorType, actorID: authorID, hiddenFrom: message.hiddenFrom,
            data: Self.json(id: id, group: group, authorType: authorType, authorID: authorID, authorName: authorName, message: message,
                            dedupKey: dedupKey, details: details),
            projections: """
                \(fragment: Self.messageRow(tenant: tenant, group: group, id: id, authorType: authorType, authorID: authorID, message: message)),
                alerted AS (
                    INSERT INTO alerts (tenant_id, group_id, seq, severity, opened_at, dedup_key, bridge_id, details, hidden_from)
                    SELECT \(tenant), \(group), seq, \(message.severity ?? "amber"), created_at, \(dedupKey), \(bridge),
                           \(details.map(RawJSON.init)), \(message.hiddenFrom)
                    FROM posted WHERE \(message.kind) = 'alert')
                """,
            committing: commits,
            // A chat line's notice need not wait for the commits before it (see `NoticeTiming`); an
            // alert's goes with its commit, so only a lost chat line ever waits for the audit.
            notice: message.kind == .chat && commits ? .afterCommit : .withCommit, on: connection)
        try MediaStore().link(message.attachments.ids, tenant: tenant, group: group, seq: event.seq, on: connection)
        if escalates {
            try EscalationStore().schedule(tenant: tenant, group: group, seq: event.seq, on: connection)
        }
        return (event.seq, json)
    }

    /// The projection that writes a posted message's `messages` row: the `WITH` item `posted`
    /// (with its leading comma), reading the event's seq and time from `appended`.
    static func messageRow(tenant: UUID, group: UUID, id: UUID, authorType: ActorType, authorID: UUID?, message: NewMessage) -> SQLQuery {
        """
        , posted AS (
            INSERT INTO messages (tenant_id, group_id, seq, id, author_type, author_id, kind, text, template, location, reply_to,
                                  client_msg_id, system_key, created_at, hidden_from)
            SELECT \(tenant), \(group), seq, \(id), \(authorType), \(authorID), \(message.kind), \(message.text),
                   \(message.template), \(message.location.map(RawJSON.init)), \(message.replyTo), \(message.clientMessageID),
                   \(message.systemKey), created_at, \(message.hiddenFrom)
            FROM appended
            RETURNING seq, created_at)
        """
    }

    /// A new message as the API shows it (the same shape `messageJSON` builds from the tables),
    /// with holes for its seq and time.
    /// `authorName`: the name as text, or nil when the statement reads it (`gate.display_name`,
    /// a chat line's `chatLineGate`).
    static func json(id: UUID, group: UUID, authorType: ActorType, authorID: UUID?, authorName: String?,
                     message: NewMessage, dedupKey: String?, details: String? = nil) -> EventDataText {
        func quote(_ text: String?) -> String { text.map(JSONString.quote) ?? "null" }
        var json = EventDataText()
        json.append("{\"id\":\(quote(id.lowercasedText)),\"group_id\":\(quote(group.lowercasedText)),\"seq\":")
        json.appendSeq()
        json.append(",\"kind\":\(quote(message.kind.name)),\"author\":{\"type\":\(quote(authorType.name)),\"id\":\(quote(authorID?.lowercasedText)),"
            + "\"display_name\":")
        if let authorName { json.append(quote(authorName)) } else { json.appendExpression("to_json(gate.display_name)::text") }
        json.append("},\"text\":\(quote(message.text)),\"template\":\(quote(message.template)),"
            + "\"location\":\(message.location ?? "null"),\"reply_to\":\(message.replyTo.map(String.init) ?? "null"),\"created_at\":\"")
        json.appendAt()
        json.append("\",\"client_msg_id\":\(quote(message.clientMessageID)),\"redacted\":false,\"attachments\":\(message.attachments.json),\"alert\":")
        if message.kind == .alert {
            json.append("{\"severity\":\(quote(message.severity ?? "amber")),\"status\":\"open\",\"opened_at\":\"")
            json.appendAt()
            json.append("\",\"closed_at\":null,\"closed_by\":null,\"resolution\":null,\"dedup_key\":\(quote(dedupKey)),\"repeat_count\":0,"
                + "\"details\":\(details ?? "null"),\"escalation_level\":0,\"acks\":[]}}")
        } else {
            json.append("null}")
        }
        return json
    }

    /// Newest first, before `seq` (exclusive) when given.
    public func messages(group: UUID, before: Int64?, limit: Int, on connection: PostgresConnection) throws -> [(seq: Int64, json: String)] {
        try connection.query("""
            SELECT m.seq, \(unsafeRaw: Self.messageJSON) AS json FROM messages m \(unsafeRaw: Self.messageJoins)
            WHERE m.group_id = \(group) AND (\(before)::bigint IS NULL OR m.seq < \(before))
            ORDER BY m.seq DESC LIMIT \(limit)
            """).rows.map { (try $0.decode(Int64.self, "seq"), try $0.decode(String.self, "json")) }
    }

    /// Messages whose `reply_to` is `seq`, oldest first, after `after` (exclusive).
    public func replies(group: UUID, to seq: Int64, after: Int64, limit: Int, on connection: PostgresConnection) throws -> [(seq: Int64, json: String)] {
        try connection.query("""
            SELECT m.seq, \(unsafeRaw: Self.messageJSON) AS json FROM messages m \(unsafeRaw: Self.messageJoins)
            WHERE m.group_id = \(group) AND m.reply_to = \(seq) AND m.seq > \(after)
            ORDER BY m.seq LIMIT \(limit)
            """).rows.map { (try $0.decode(Int64.self, "seq"), try $0.decode(String.self, "json")) }
    }

    /// Members listed in an alert's `nearby`, nearest first.
    public static let nearbyCount = 10

    /// One message as the alert detail shows it: an alert's object gains `receipts` (members
    /// now; pushed; seen: members whose read marker reached it or who answered; acknowledged:
    /// members who answered), and, when `showNearby` (the group's managers), `nearby`: the
    /// members whose home is nearest the alert's place (those who set one) with their answers,
    /// each distance given only as a band (`< 100 m`, `100-300 m`, `300 m-1 km`, `> 1 km`), so
    /// no run of alerts can place a home. Nil when there is no such message.
    public func detail(group: UUID, seq: Int64, showNearby: Bool, on connection: PostgresConnection) throws -> String? {
        try connection.query("""
            SELECT CASE WHEN a.seq IS NULL THEN j.json ELSE jsonb_set(j.json, '{alert}', (j.json->'alert') || jsonb_build_object('receipts', jsonb_build_object(
                'members', (SELECT count(*) FROM memberships mb WHERE mb.tenant_id = a.tenant_id AND mb.group_id = a.group_id),
                'pushed', (SELECT count(*) FROM alert_recipients r WHERE r.tenant_id = a.tenant_id AND r.group_id = a.group_id AND r.seq = a.seq),
                'seen', (SELECT count(*) FROM memberships mb WHERE mb.tenant_id = a.tenant_id AND mb.group_id = a.group_id
                           AND (mb.read_seq >= a.seq OR EXISTS (SELECT 1 FROM alert_acks k WHERE k.tenant_id = a.tenant_id
                                AND k.group_id = a.group_id AND k.seq = a.seq AND k.user_id = mb.user_id))),
                'acknowledged', (SELECT count(*) FROM alert_acks k JOIN memberships mb ON mb.tenant_id = k.tenant_id
                                   AND mb.group_id = k.group_id AND mb.user_id = k.user_id
                                 WHERE k.tenant_id = a.tenant_id AND k.group_id = a.group_id AND k.seq = a.seq)))
                || CASE WHEN \(showNearby) THEN jsonb_build_object('nearby', coalesce((
                           SELECT jsonb_agg(jsonb_build_object('user_id', n.user_id, 'display_name', n.display_name,
                                                               'distance', CASE WHEN n.distance < 100 THEN '<100m' WHEN n.distance < 300 THEN '100-300m'
                                                                                WHEN n.distance < 1000 THEN '300m-1km' ELSE '>1km' END,
                                                               'response', n.response) ORDER BY n.distance, n.user_id)
                           FROM (SELECT mb.user_id, nu.display_name, round(roost_distance_m(nu.home->'location', m.location)) AS distance, k.response
                                 FROM memberships mb JOIN users nu ON nu.tenant_id = mb.tenant_id AND nu.id = mb.user_id
                                 LEFT JOIN alert_acks k ON k.tenant_id = a.tenant_id AND k.group_id = a.group_id AND k.seq = a.seq
                                                       AND k.user_id = mb.user_id
                                 WHERE mb.tenant_id = a.tenant_id AND mb.group_id = a.group_id AND mb.user_id IS DISTINCT FROM m.author_id
                                   AND roost_distance_m(nu.home->'location', m.location) IS NOT NULL
                                 ORDER BY 3, 1 LIMIT \(Self.nearbyCount)) n), '[]'::jsonb))
                   ELSE '{}'::jsonb END)
            END::text AS json
            FROM messages m \(unsafeRaw: Self.messageJoins)
            CROSS JOIN LATERAL (SELECT \(unsafeRaw: Self.messageObject) AS json) j
            WHERE m.group_id = \(group) AND m.seq = \(seq)
            """).first?.decode(String.self, "json")
    }

    /// Alerts of one group with their state, newest first.
    public func alerts(group: UUID, status: String?, before: Int64?, limit: Int, on connection: PostgresConnection) throws -> [(seq: Int64, json: String)] {
        try connection.query("""
            SELECT m.seq, \(unsafeRaw: Self.messageJSON) AS json FROM messages m \(unsafeRaw: Self.messageJoins)
            WHERE m.group_id = \(group) AND a.seq IS NOT NULL AND (\(status)::text IS NULL OR a.status = \(status))
              AND (\(before)::bigint IS NULL OR m.seq < \(before))
            ORDER BY m.seq DESC LIMIT \(limit)
            """).rows.map { (try $0.decode(Int64.self, "seq"), try $0.decode(String.self, "json")) }
    }

    /// Where a page of open alerts across groups continues: the previous page's last alert.
    public struct AlertPosition: Sendable, Equatable {
        public let openedMicros: Int64
        public let group: UUID
        public let seq: Int64

        public init(openedMicros: Int64, group: UUID, seq: Int64) {
            (self.openedMicros, self.group, self.seq) = (openedMicros, group, seq)
        }
    }

    /// Open alerts across every group the user is in, newest first, in one indexed query: at
    /// most `limit` of them after `after`, each with its place in the order.
    public func openAlerts(of user: UUID, after: AlertPosition?, limit: Int, on connection: PostgresConnection) throws
        -> [(json: String, position: AlertPosition)]
    {
        try connection.query("""
            SELECT \(unsafeRaw: Self.messageJSON) AS json, (extract(epoch FROM a.opened_at) * 1000000)::int8 AS opened_micros,
                   m.group_id, m.seq
            FROM memberships mb
            JOIN alerts a ON a.tenant_id = mb.tenant_id AND a.group_id = mb.group_id AND a.status = 'open'
            JOIN messages m ON m.tenant_id = a.tenant_id AND m.group_id = a.group_id AND m.seq = a.seq
            LEFT JOIN users u ON u.tenant_id = m.tenant_id AND u.id = m.author_id AND m.author_type = 'user'
            LEFT JOIN bridges b ON b.tenant_id = m.tenant_id AND b.id = m.author_id AND m.author_type = 'bridge'
            LEFT JOIN cap_feeds f ON f.id = m.author_id AND m.author_type = 'feed'
            WHERE mb.user_id = \(user)
              AND (\(after?.seq)::int8 IS NULL
                   OR (a.opened_at, m.group_id, m.seq)
                      < ('epoch'::timestamptz + \(after?.openedMicros)::int8 * interval '1 microsecond', \(after?.group)::uuid, \(after?.seq)::int8))
            ORDER BY a.opened_at DESC, m.group_id DESC, m.seq DESC LIMIT \(limit)
            """).rows.map { row in
            (try row.decode(String.self, "json"),
             AlertPosition(openedMicros: try row.decode(Int64.self, "opened_micros"), group: try row.decode(UUID.self, "group_id"),
                           seq: try row.decode(Int64.self, "seq")))
        }
    }

    /// The message a reply names, if it exists in the group: with the user who raised it when
    /// it is an alert a member raised (nil for a chat message, or an alert of a bridge or the server).
    public func replyTarget(group: UUID, seq: Int64, on connection: PostgresConnection) throws -> ReplyTarget? {
        try connection.query("""
            SELECT CASE WHEN a.seq IS NOT NULL AND m.author_type = 'user' THEN m.author_id END AS alert_author, m.hidden_from
            FROM messages m LEFT JOIN alerts a ON a.tenant_id = m.tenant_id AND a.group_id = m.group_id AND a.seq = m.seq
            WHERE m.group_id = \(group) AND m.seq = \(seq)
            """).first.map { ReplyTarget(alertAuthor: try $0.decode(UUID?.self, "alert_author"), hiddenFrom: try $0.decode(UUID?.self, "hidden_from")) }
    }

    /// An alert's author and status (and whom it is hidden from), locked for a change (the
    /// group first: see `GroupStore.lock`).
    public func alertState(group: UUID, seq: Int64, on connection: PostgresConnection) throws
        -> (authorID: UUID?, status: String, hiddenFrom: UUID?)?
    {
        try GroupStore().lock(group, on: connection)
        return try connection.query("""
            SELECT m.author_id, a.status, a.hidden_from
            FROM alerts a JOIN messages m ON m.tenant_id = a.tenant_id AND m.group_id = a.group_id AND m.seq = a.seq
            WHERE a.group_id = \(group) AND a.seq = \(seq) FOR UPDATE OF a
            """).first.map { (try $0.decode(UUID?.self, "author_id"), try $0.decode(String.self, "status"), try $0.decode(UUID?.self, "hidden_from")) }
    }

    /// Whom an alert (and every event about it) is hidden from, if anyone.
    /// Who wrote the message at `seq`: a user, a bridge, the system or a feed.
    public func authorType(group: UUID, seq: Int64, on connection: PostgresConnection) throws -> ActorType? {
        try connection.query("SELECT author_type FROM messages WHERE group_id = \(group) AND seq = \(seq)").first
            .map { ActorType(try $0.decode(String.self, "author_type")) }
    }

    public func hiddenFrom(group: UUID, seq: Int64, on connection: PostgresConnection) throws -> UUID? {
        try connection.query("SELECT hidden_from FROM alerts WHERE group_id = \(group) AND seq = \(seq)").first?.decode(UUID?.self, "hidden_from")
    }

    /// Closes an open alert (`close`) or reopens a closed one, with its `alert.closed` or
    /// `alert.reopened` event `{seq, by: {type, id}, resolution}`; the message as it is now.
    /// The caller has locked the alert (`alertState`, or a bridge's `openAlert`) and checked its state.
    public func setAlert(closed close: Bool, tenant: UUID, group: UUID, seq: Int64, byType: ActorType, by: UUID, resolution: String?,
                         on connection: PostgresConnection) throws -> String {
        let changed = close
            ? try connection.query("""
                UPDATE alerts SET status = 'closed', closed_at = now(), closed_by_type = \(byType), closed_by = \(by), resolution = \(resolution)
                WHERE group_id = \(group) AND seq = \(seq) RETURNING hidden_from
                """)
            : try connection.query("""
                UPDATE alerts SET status = 'open', closed_at = NULL, closed_by_type = NULL, closed_by = NULL, resolution = NULL
                WHERE group_id = \(group) AND seq = \(seq) RETURNING hidden_from
                """)
        let hiddenFrom = try changed.first?.decode(UUID?.self, "hidden_from") ?? nil
        let data = "{\"seq\":\(seq),\"by\":{\"type\":\(JSONString.quote(byType.name)),\"id\":\"\(by.lowercasedText)\"},"
            + "\"resolution\":\(resolution.map(JSONString.quote) ?? "null")}"
        try GroupEventLog().append(tenant: tenant, group: group, event: close ? .alertClosed : .alertReopened, actorType: byType,
                                   actorID: by, data: RawJSON(data), hiddenFrom: hiddenFrom, on: connection)
        return try message(group: group, seq: seq, on: connection)!
    }

    /// One current response per member: a new one replaces the last.
    public func acknowledge(tenant: UUID, group: UUID, seq: Int64, user: UUID, response: String, note: String?, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO alert_acks (tenant_id, group_id, seq, user_id, response, note) VALUES (\(tenant), \(group), \(seq), \(user), \(response), \(note))
            ON CONFLICT (tenant_id, group_id, seq, user_id) DO UPDATE SET response = excluded.response, note = excluded.note, at = now()
            """)
    }

    /// A message's author, whether it is redacted already and whom it is hidden from, locked for
    /// the redaction.
    public func authorForRedaction(group: UUID, seq: Int64, on connection: PostgresConnection) throws
        -> (authorID: UUID?, redacted: Bool, hiddenFrom: UUID?)?
    {
        try connection.query("""
            SELECT author_id, redacted_at IS NOT NULL AS redacted, hidden_from FROM messages WHERE group_id = \(group) AND seq = \(seq) FOR UPDATE
            """).first.map { (try $0.decode(UUID?.self, "author_id"), try $0.decode(Bool.self, "redacted"), try $0.decode(UUID?.self, "hidden_from")) }
    }

    /// Blanks a message's text (and location) and removes its attachments (uploads linked
    /// nowhere else are deleted); the event stays, and so does the original `message.created`
    /// event's record that something was said, but not what.
    public func redact(group: UUID, seq: Int64, on connection: PostgresConnection) throws {
        try connection.query("""
            UPDATE messages SET text = '', location = NULL, redacted_at = now() WHERE group_id = \(group) AND seq = \(seq)
            """)
        try MediaStore().unlink(group: group, seq: seq, on: connection)
        try connection.query("""
            UPDATE group_events SET data = jsonb_set(jsonb_set(jsonb_set(data, '{text}', '""'), '{location}', 'null'), '{attachments}', '[]')
            WHERE group_id = \(group) AND seq = \(seq) AND event = 'message.created'
            """)
    }
}
