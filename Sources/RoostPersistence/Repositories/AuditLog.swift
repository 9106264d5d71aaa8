import Foundation
import RoostProtocol

/// One thing done to a group, as its audit shows it (sql/0019_audit_log.sql).
public struct AuditEntry: Sendable, Equatable {
    public let id: UUID
    public let groupID: UUID?
    public let at: Date
    public let actorType: String
    public let actorID: UUID?
    /// The user's or bridge's name now ("deleted user" once erased), or nil for the server.
    public let actorName: String?
    public let action: AuditAction
    public let targetType: String?
    public let targetID: String?
    /// Who or what the entry is about, as named now: a member, a bridge, an escalation contact
    /// (names only: the audit shows no address); nil for other targets and for rows deleted since.
    public let targetName: String?
    /// JSON text.
    public let data: String
}

/// Who did what to a group, written in the transaction of each change and read newest first,
/// in a tenant transaction.
public struct AuditLog: Sendable {
    public init() {}

    /// Who did it: a member, a bridge, or the server itself.
    public struct Actor: Sendable {
        public let type: ActorType
        public let id: UUID?
        public init(type: ActorType, id: UUID?) {
            self.type = type
            self.id = id
        }
        public static func user(_ id: UUID) -> Actor { Actor(type: .user, id: id) }
        public static let system = Actor(type: .system, id: nil)
        public static let `operator` = Actor(type: .operator, id: nil)
    }

    public func record(tenant: UUID, group: UUID, actor: Actor, action: AuditAction, target: (type: String, id: String)? = nil,
                       data: String = "{}", hiddenFrom: UUID? = nil, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO audit_log (tenant_id, group_id, actor_type, actor_id, action, target_type, target_id, data, hidden_from)
            VALUES (\(tenant), \(group), \(actor.type), \(actor.id), \(action), \(target?.type), \(target?.id), \(RawJSON(data)), \(hiddenFrom))
            """)
    }

    /// A group's entries (or, with `group` nil, the tenant's), newest first, before `before`,
    /// since `since`.
    public func entries(group: UUID?, before: NewestFirst?, since: Date? = nil, limit: Int, on connection: PostgresConnection) throws -> [AuditEntry] {
        try connection.query("""
            SELECT l.id, l.group_id, l.at, l.actor_type, l.actor_id, l.action, l.target_type, l.target_id, l.data::text AS data,
                   CASE l.actor_type WHEN 'user' THEN u.display_name WHEN 'bridge' THEN coalesce(b.name, 'removed bridge')
                                     WHEN 'feed' THEN coalesce((SELECT f.name FROM cap_feeds f WHERE f.id = l.actor_id), 'removed feed') END AS actor_name,
                   coalesce(tu.display_name, tb.name, tc.name) AS target_name
            FROM audit_log l
            LEFT JOIN users u ON l.actor_type = 'user' AND u.tenant_id = l.tenant_id AND u.id = l.actor_id
            LEFT JOIN bridges b ON l.actor_type = 'bridge' AND b.tenant_id = l.tenant_id AND b.id = l.actor_id
            LEFT JOIN users tu ON l.target_type = 'user' AND tu.tenant_id = l.tenant_id
                AND tu.id = CASE WHEN l.target_type = 'user' THEN l.target_id::uuid END
            LEFT JOIN bridges tb ON l.target_type = 'bridge' AND tb.tenant_id = l.tenant_id
                AND tb.id = CASE WHEN l.target_type = 'bridge' THEN l.target_id::uuid END
            LEFT JOIN escalation_contacts tc ON l.target_type = 'escalation_contact' AND tc.tenant_id = l.tenant_id
                AND tc.id = CASE WHEN l.target_type = 'escalation_contact' THEN l.target_id::uuid END
            WHERE (\(group)::uuid IS NULL OR l.group_id = \(group)) AND (\(since)::timestamptz IS NULL OR l.at >= \(since))
              AND (\(before?.micros)::int8 IS NULL
                   OR (l.at, l.id) < ('epoch'::timestamptz + \(before?.micros)::int8 * interval '1 microsecond', \(before?.id)::uuid))
            ORDER BY l.at DESC, l.id DESC LIMIT \(limit)
            """).rows.map {
            AuditEntry(id: try $0.decode(UUID.self, "id"), groupID: try $0.decode(UUID?.self, "group_id"), at: try $0.decode(Date.self, "at"),
                       actorType: try $0.decode(String.self, "actor_type"), actorID: try $0.decode(UUID?.self, "actor_id"),
                       actorName: try $0.decode(String?.self, "actor_name"), action: try $0.decode(AuditAction.self, "action"),
                       targetType: try $0.decode(String?.self, "target_type"), targetID: try $0.decode(String?.self, "target_id"),
                       targetName: try $0.decode(String?.self, "target_name"), data: try $0.decode(String.self, "data"))
        }
    }
}
