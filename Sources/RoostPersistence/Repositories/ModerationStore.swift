import Foundation
import RoostProtocol

/// A member's report of a message, as the group's managers' queue shows it.
public struct MessageReport: Sendable, Equatable {
    public let id: UUID
    public let groupID: UUID
    public let seq: Int64
    public let reason: String
    public let status: String
    /// What the manager who closed it did: "none" or "removed"; nil while open.
    public let action: String?
    public let createdAt: Date
    public let closedAt: Date?
    public let reporterID: UUID?
    public let reporterName: String?
    /// The message as it is now (empty once removed), its author's name.
    public let messageText: String
    public let messageRedacted: Bool
    public let authorType: String
    public let authorID: UUID?
    public let authorName: String?
    /// Whom the message is hidden from (a duress alert's walker): never told of its reports.
    public let messageHiddenFrom: UUID?
}

/// Reports, mutes and blocks in a group (sql/0034_moderation.sql), in a tenant transaction.
public struct ModerationStore: Sendable {
    public init() {}

    public enum ReportOutcome: Sendable, Equatable {
        case created(UUID)
        /// The reporter has an open report of this message already.
        case duplicate
        /// No such message the reporter may see.
        case noMessage
    }

    /// Files `reporter`'s report of message `seq`; row security hides a message hidden from the
    /// reporter, so it cannot be reported (nor its existence learnt).
    public func report(tenant: UUID, group: UUID, seq: Int64, reporter: UUID, reason: String, on connection: PostgresConnection) throws -> ReportOutcome {
        let row = try connection.query("""
            WITH message AS (SELECT 1 FROM messages WHERE group_id = \(group) AND seq = \(seq)),
                 filed AS (
                INSERT INTO message_reports (tenant_id, group_id, seq, reporter_id, reason)
                SELECT \(tenant), \(group), \(seq), \(reporter), \(reason) WHERE EXISTS (SELECT 1 FROM message)
                ON CONFLICT (tenant_id, group_id, seq, reporter_id) WHERE status = 'open' DO NOTHING
                RETURNING id)
            SELECT (SELECT id FROM filed) AS id, EXISTS (SELECT 1 FROM message) AS found
            """).rows[0]
        if let id = try row.decode(UUID?.self, "id") { return .created(id) }
        return try row.decode(Bool.self, "found") ? .duplicate : .noMessage
    }

    private static let reportColumns = """
        r.id, r.group_id, r.seq, r.reason, r.status, r.action, r.created_at, r.closed_at, r.reporter_id, ru.display_name AS reporter_name,
        coalesce(m.text, '') AS message_text, coalesce(m.redacted_at IS NOT NULL, true) AS message_redacted,
        coalesce(m.author_type, 'user') AS author_type, m.author_id,
        CASE m.author_type WHEN 'user' THEN au.display_name WHEN 'bridge' THEN b.name
                           WHEN 'feed' THEN (SELECT f.name FROM cap_feeds f WHERE f.id = m.author_id) END AS author_name, m.hidden_from
        FROM message_reports r
        LEFT JOIN users ru ON ru.tenant_id = r.tenant_id AND ru.id = r.reporter_id
        LEFT JOIN messages m ON m.tenant_id = r.tenant_id AND m.group_id = r.group_id AND m.seq = r.seq
        LEFT JOIN users au ON m.author_type = 'user' AND au.tenant_id = m.tenant_id AND au.id = m.author_id
        LEFT JOIN bridges b ON m.author_type = 'bridge' AND b.tenant_id = m.tenant_id AND b.id = m.author_id
        """

    /// A group's reports with `status`, newest first, before the position `before`. A report of a
    /// message row security hides from the reader (a duress alert, read by its walker) is left
    /// out: the queue must not tell them such a message exists.
    public func reports(group: UUID, status: String, before: NewestFirst?, limit: Int, on connection: PostgresConnection) throws -> [MessageReport] {
        try connection.query("""
            SELECT \(unsafeRaw: Self.reportColumns)
            WHERE r.group_id = \(group) AND r.status = \(status) AND m.seq IS NOT NULL
              AND (\(before?.micros)::int8 IS NULL
                   OR (r.created_at, r.id) < ('epoch'::timestamptz + \(before?.micros)::int8 * interval '1 microsecond', \(before?.id)::uuid))
            ORDER BY r.created_at DESC, r.id DESC LIMIT \(limit)
            """).rows.map(decode)
    }

    /// One report, unless its message is hidden from the reader (then nil, as for none).
    public func report(_ id: UUID, group: UUID, on connection: PostgresConnection) throws -> MessageReport? {
        try connection.query("SELECT \(unsafeRaw: Self.reportColumns) WHERE r.group_id = \(group) AND r.id = \(id) AND m.seq IS NOT NULL")
            .first.map(decode)
    }

    /// Closes an open report with what was done; false when there is no open report `id`.
    public func close(_ id: UUID, group: UUID, action: String, by user: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            UPDATE message_reports SET status = 'closed', action = \(action), closed_at = now(), closed_by = \(user)
            WHERE group_id = \(group) AND id = \(id) AND status = 'open'
            """).affectedRows == 1
    }

    /// Closes every other open report of the same message as removed (the message is gone for all of them).
    public func closeOthers(group: UUID, seq: Int64, by user: UUID, on connection: PostgresConnection) throws {
        try connection.query("""
            UPDATE message_reports SET status = 'closed', action = 'removed', closed_at = now(), closed_by = \(user)
            WHERE group_id = \(group) AND seq = \(seq) AND status = 'open'
            """)
    }

    /// Mutes a member until `until` (nil: unmutes); false when they are no member.
    public func mute(_ user: UUID, in group: UUID, until: Date?, on connection: PostgresConnection) throws -> Bool {
        try connection.query("UPDATE memberships SET muted_until = \(until) WHERE group_id = \(group) AND user_id = \(user)").affectedRows == 1
    }

    /// Until when a member is muted; nil when not muted or no member.
    public func mutedUntil(_ user: UUID, in group: UUID, on connection: PostgresConnection) throws -> Date? {
        try connection.query("""
            SELECT muted_until FROM memberships WHERE group_id = \(group) AND user_id = \(user) AND muted_until > now()
            """).first?.decode(Date?.self, "muted_until")
    }

    /// Records that `user` may not come back to `group` by invitation, with their addresses now;
    /// their pending invitations to it are revoked.
    public func block(_ user: UUID, in group: UUID, tenant: UUID, by blocker: UUID, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO group_blocks (tenant_id, group_id, user_id, email, phone, blocked_by)
            SELECT \(tenant), \(group), id, email, phone, \(blocker) FROM users WHERE id = \(user)
            ON CONFLICT (tenant_id, group_id, user_id) DO UPDATE SET email = excluded.email, phone = excluded.phone,
                                                                     blocked_by = excluded.blocked_by, created_at = now()
            """)
        try connection.query("""
            UPDATE invitations i SET status = 'revoked', responded_at = now()
            FROM group_blocks k
            WHERE k.group_id = \(group) AND k.user_id = \(user) AND i.group_id = \(group) AND i.status = 'pending'
              AND (i.email = k.email OR i.phone = k.phone)
            """)
    }

    /// Whether an invitation to `group` for this address, or accepted by `user`, is refused by a block.
    public func isBlocked(group: UUID, email: String?, phone: String?, user: UUID? = nil, on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            SELECT EXISTS (SELECT 1 FROM group_blocks WHERE group_id = \(group)
                           AND ((\(email)::text IS NOT NULL AND email = \(email)) OR (\(phone)::text IS NOT NULL AND phone = \(phone))
                                OR (\(user)::uuid IS NOT NULL AND user_id = \(user)))) AS blocked
            """).rows[0].decode(Bool.self, "blocked")
    }

    private func decode(_ row: PostgresRow) throws -> MessageReport {
        MessageReport(id: try row.decode(UUID.self, "id"), groupID: try row.decode(UUID.self, "group_id"), seq: try row.decode(Int64.self, "seq"),
                      reason: try row.decode(String.self, "reason"), status: try row.decode(String.self, "status"),
                      action: try row.decode(String?.self, "action"), createdAt: try row.decode(Date.self, "created_at"),
                      closedAt: try row.decode(Date?.self, "closed_at"), reporterID: try row.decode(UUID?.self, "reporter_id"),
                      reporterName: try row.decode(String?.self, "reporter_name"), messageText: try row.decode(String.self, "message_text"),
                      messageRedacted: try row.decode(Bool.self, "message_redacted"), authorType: try row.decode(String.self, "author_type"),
                      authorID: try row.decode(UUID?.self, "author_id"), authorName: try row.decode(String?.self, "author_name"),
                      messageHiddenFrom: try row.decode(UUID?.self, "hidden_from"))
    }
}
