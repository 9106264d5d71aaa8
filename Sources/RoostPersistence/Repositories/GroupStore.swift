import Foundation
import RoostProtocol

/// A watch group as its members see it.
public struct WatchGroup: Sendable, Equatable {
    public let id: UUID
    public let name: String
    public let description: String
    public let lastSeq: Int64
    public let createdAt: Date
}

/// One of the caller's groups in `GET /v1/groups`.
public struct GroupSummary: Sendable, Equatable {
    public let id: UUID
    public let name: String
    public let role: String
    public let lastSeq: Int64
    public let openAlerts: Int
}

/// Groups and memberships, in a tenant transaction. Every membership change goes through
/// `GroupEventLog.append`.
public struct GroupStore: Sendable {
    public init() {}

    /// A new group owned by `owner`, whose joining is the group's first event.
    public func create(tenant: UUID, owner: UUID, name: String, description: String, on connection: PostgresConnection) throws -> WatchGroup {
        let id = try connection.query("""
            INSERT INTO groups (tenant_id, name, description, created_by) VALUES (\(tenant), \(name), \(description), \(owner))
            RETURNING id
            """).rows[0].decode(UUID.self, "id")
        try connection.query("""
            INSERT INTO memberships (tenant_id, group_id, user_id, role) VALUES (\(tenant), \(id), \(owner), 'owner')
            """)
        let data = #"{"user_id":"\#(owner.uuidString.lowercased())","role":"owner"}"#
        try GroupEventLog().append(tenant: tenant, group: id, event: .memberJoined, actorType: "user", actorID: owner,
                                       data: RawJSON(data), subject: owner, on: connection)
        try TemplateStore().replace(tenant: tenant, group: id, with: TemplateStore.defaults, on: connection)
        return try group(id: id, on: connection)!
    }

    public func group(id: UUID, on connection: PostgresConnection) throws -> WatchGroup? {
        try connection.query("""
            SELECT id, name, description, last_seq, created_at FROM groups WHERE id = \(id)
            """).first.map {
            WatchGroup(id: try $0.decode(UUID.self, "id"), name: try $0.decode(String.self, "name"),
                       description: try $0.decode(String.self, "description"), lastSeq: try $0.decode(Int64.self, "last_seq"),
                       createdAt: try $0.decode(Date.self, "created_at"))
        }
    }

    /// The caller's role in a group, or nil when not a member (the API then answers 404).
    public func role(of user: UUID, in group: UUID, on connection: PostgresConnection) throws -> Role? {
        try connection.query("SELECT role FROM memberships WHERE group_id = \(group) AND user_id = \(user)").first.map { Role(try $0.decode(String.self, "role")) }
    }

    /// The caller's groups with their open alert counts, in one indexed query.
    public func groups(of user: UUID, on connection: PostgresConnection) throws -> [GroupSummary] {
        try connection.query("""
            SELECT g.id, g.name, m.role, g.last_seq,
                   (SELECT count(*) FROM alerts a WHERE a.tenant_id = g.tenant_id AND a.group_id = g.id AND a.status = 'open') AS open_alerts
            FROM memberships m JOIN groups g ON g.tenant_id = m.tenant_id AND g.id = m.group_id
            WHERE m.user_id = \(user) ORDER BY g.name, g.id
            """).rows.map {
            GroupSummary(id: try $0.decode(UUID.self, "id"), name: try $0.decode(String.self, "name"), role: try $0.decode(String.self, "role"),
                         lastSeq: try $0.decode(Int64.self, "last_seq"), openAlerts: try $0.decode(Int.self, "open_alerts"))
        }
    }
}

/// A member as `GET /v1/groups/{gid}/members` lists them.
public struct Member: Sendable, Equatable {
    public let userID: UUID
    public let displayName: String
    public let role: String
    public let joinedAt: Date
}

extension GroupStore {
    public func members(of group: UUID, on connection: PostgresConnection) throws -> [Member] {
        try connection.query("""
            SELECT m.user_id, u.display_name, m.role, m.joined_at
            FROM memberships m JOIN users u ON u.tenant_id = m.tenant_id AND u.id = m.user_id
            WHERE m.group_id = \(group)
            ORDER BY CASE m.role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END, m.joined_at, m.user_id
            """).rows.map {
            Member(userID: try $0.decode(UUID.self, "user_id"), displayName: try $0.decode(String.self, "display_name"),
                   role: try $0.decode(String.self, "role"), joinedAt: try $0.decode(Date.self, "joined_at"))
        }
    }

    /// Renames or re-describes a group; nil leaves a field as it is.
    public func update(group: UUID, name: String?, description: String?, on connection: PostgresConnection) throws {
        try connection.query("""
            UPDATE groups SET name = coalesce(\(name), name), description = coalesce(\(description), description), updated_at = now()
            WHERE id = \(group)
            """)
    }

    /// Deletes a group with everything in it, and tells every node (its members' streams get
    /// `group.removed`).
    public func delete(group: UUID, on connection: PostgresConnection) throws {
        guard let tenant = try connection.query("DELETE FROM groups WHERE id = \(group) RETURNING tenant_id").first?
            .decode(UUID.self, "tenant_id") else { return }
        try GroupEventLog.notify(.groupDeleted(tenant: tenant, group: group), on: connection)
    }

    public func setRole(_ role: Role, of user: UUID, in group: UUID, on connection: PostgresConnection) throws {
        try connection.query("UPDATE memberships SET role = \(role.name) WHERE group_id = \(group) AND user_id = \(user)")
    }

    public func removeMember(_ user: UUID, from group: UUID, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM memberships WHERE group_id = \(group) AND user_id = \(user)")
    }
}

extension GroupStore {
    /// Every group the user is in with their role, locked for a change that ends them all.
    public func memberships(of user: UUID, on connection: PostgresConnection) throws -> [(group: UUID, role: String)] {
        try connection.query("""
            SELECT group_id, role FROM memberships WHERE user_id = \(user) ORDER BY group_id FOR UPDATE
            """).rows.map { (try $0.decode(UUID.self, "group_id"), try $0.decode(String.self, "role")) }
    }

    /// Who inherits a group its owner leaves for good: the longest-standing admin, else the
    /// longest-standing member, else nobody.
    public func successor(in group: UUID, excluding owner: UUID, on connection: PostgresConnection) throws -> (user: UUID, role: String)? {
        try connection.query("""
            SELECT user_id, role FROM memberships WHERE group_id = \(group) AND user_id <> \(owner)
            ORDER BY CASE role WHEN 'admin' THEN 0 ELSE 1 END, joined_at, user_id
            LIMIT 1
            """).first.map { (try $0.decode(UUID.self, "user_id"), try $0.decode(String.self, "role")) }
    }
}

extension GroupStore {
    /// Locks the group's row for the rest of the transaction. Appending an event locks it too,
    /// so a change that locks an alert and then appends must take this lock first: otherwise it
    /// and a concurrent post (which holds the group and then waits on the alert's unique index)
    /// wait for each other.
    public func lock(_ group: UUID, on connection: PostgresConnection) throws {
        try connection.query("SELECT 1 FROM groups WHERE id = \(group) FOR UPDATE")
    }
}
