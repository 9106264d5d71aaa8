import Foundation
import RoostProtocol

/// An account as the operator sees it (API.md "Moderation and tenant administration").
public struct AdminUser: Sendable, Equatable {
    public let id: UUID
    public let displayName: String
    public let email: String?
    public let phone: String?
    public let createdAt: Date
    public let suspended: Bool
    public let coordinator: Bool
}

/// A group as the operator sees it.
public struct AdminGroup: Sendable, Equatable {
    public let id: UUID
    public let name: String
    public let createdAt: Date
    public let members: Int
    public let ownerID: UUID?
    public let ownerName: String?
}

/// The operator's view of one tenant's accounts and groups, in a tenant transaction.
public struct TenantAdminStore: Sendable {
    public init() {}

    private static let userColumns = "id, display_name, email, phone, created_at, suspended_at IS NOT NULL AS suspended, coordinator"

    /// Live accounts by id, after `after`.
    public func users(after: UUID?, limit: Int, on connection: PostgresConnection) throws -> [AdminUser] {
        try connection.query("""
            SELECT \(unsafeRaw: Self.userColumns) FROM users
            WHERE deleted_at IS NULL AND (\(after)::uuid IS NULL OR id > \(after)) ORDER BY id LIMIT \(limit)
            """).rows.map(decodeUser)
    }

    public func user(_ id: UUID, on connection: PostgresConnection) throws -> AdminUser? {
        try connection.query("SELECT \(unsafeRaw: Self.userColumns) FROM users WHERE id = \(id) AND deleted_at IS NULL").first.map(decodeUser)
    }

    /// Suspends (or lets back) a live account; false when there is none such. Suspending ends
    /// its sessions elsewhere (`UserStore.deleteSessions`).
    public func setSuspended(_ suspended: Bool, user: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            UPDATE users SET suspended_at = CASE WHEN \(suspended) THEN coalesce(suspended_at, now()) END
            WHERE id = \(user) AND deleted_at IS NULL
            """).affectedRows == 1
    }

    /// Makes a live account a coordinator of its tenant, or not; false when there is none such.
    public func setCoordinator(_ coordinator: Bool, user: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("UPDATE users SET coordinator = \(coordinator) WHERE id = \(user) AND deleted_at IS NULL").affectedRows == 1
    }

    /// The tenant's groups by name, after (`name`, `id`), with their member counts and owners.
    public func groups(after: (name: String, id: UUID)?, limit: Int, on connection: PostgresConnection) throws -> [AdminGroup] {
        try groups(after: after, only: nil, limit: limit, on: connection)
    }

    public func group(_ id: UUID, on connection: PostgresConnection) throws -> AdminGroup? {
        try groups(after: nil, only: id, limit: 1, on: connection).first
    }

    private func groups(after: (name: String, id: UUID)?, only: UUID?, limit: Int, on connection: PostgresConnection) throws -> [AdminGroup] {
        try connection.query("""
            SELECT g.id, g.name, g.created_at,
                   (SELECT count(*) FROM memberships m WHERE m.tenant_id = g.tenant_id AND m.group_id = g.id) AS members,
                   o.user_id AS owner_id, ou.display_name AS owner_name
            FROM groups g
            LEFT JOIN memberships o ON o.tenant_id = g.tenant_id AND o.group_id = g.id AND o.role = 'owner'
            LEFT JOIN users ou ON ou.tenant_id = o.tenant_id AND ou.id = o.user_id
            WHERE (\(only)::uuid IS NULL OR g.id = \(only)) AND (\(after?.id)::uuid IS NULL OR (g.name, g.id) > (\(after?.name)::text, \(after?.id)::uuid))
            ORDER BY g.name, g.id LIMIT \(limit)
            """).rows.map {
            AdminGroup(id: try $0.decode(UUID.self, "id"), name: try $0.decode(String.self, "name"), createdAt: try $0.decode(Date.self, "created_at"),
                       members: try $0.decode(Int.self, "members"), ownerID: try $0.decode(UUID?.self, "owner_id"),
                       ownerName: try $0.decode(String?.self, "owner_name"))
        }
    }

    /// The group's owner now, if any.
    public func owner(of group: UUID, on connection: PostgresConnection) throws -> UUID? {
        try connection.query("SELECT user_id FROM memberships WHERE group_id = \(group) AND role = 'owner' FOR UPDATE").first?.decode(UUID.self, "user_id")
    }

    /// Deletes the transaction's tenant with everything in it, first telling every node to close
    /// the streams of its accounts with sessions.
    public func deleteTenant(_ tenant: UUID, on connection: PostgresConnection) throws {
        let signedIn = try connection.query("SELECT DISTINCT user_id FROM sessions").rows.map { try $0.decode(UUID.self, "user_id") }
        for user in signedIn { try GroupEventLog.notify(.accountEnded(tenant: tenant, user: user), on: connection) }
        try connection.query("DELETE FROM tenants WHERE id = \(tenant)")
    }

    /// An invitation to register in the transaction's tenant (`role` coordinator or member),
    /// its token kept only as a hash; its id.
    public func createInvitation(tenant: UUID, email: String?, phone: String?, role: String, tokenHash: [UInt8], lifetime: Int,
                                 on connection: PostgresConnection) throws -> (id: UUID, expiresAt: Date) {
        let row = try connection.query("""
            INSERT INTO tenant_invitations (tenant_id, email, phone, role, token_hash, expires_at)
            VALUES (\(tenant), \(email), \(phone), \(role), \(Data(tokenHash)), now() + \(lifetime) * interval '1 second')
            RETURNING id, expires_at
            """).rows[0]
        return (try row.decode(UUID.self, "id"), try row.decode(Date.self, "expires_at"))
    }

    /// Answers the unanswered, unexpired tenant invitation with this token hash for `user`:
    /// its role, and the address it went to (now proven theirs), or nil when there is none such.
    public func acceptInvitation(tokenHash: [UInt8], by user: UUID, on connection: PostgresConnection)
        throws -> (role: String, email: String?, phone: String?)?
    {
        try connection.query("""
            UPDATE tenant_invitations SET accepted_at = now(), accepted_by = \(user)
            WHERE token_hash = \(Data(tokenHash)) AND accepted_at IS NULL AND expires_at > now()
            RETURNING role, email, phone
            """).first.map { (try $0.decode(String.self, "role"), try $0.decode(String?.self, "email"), try $0.decode(String?.self, "phone")) }
    }

    private func decodeUser(_ row: PostgresRow) throws -> AdminUser {
        AdminUser(id: try row.decode(UUID.self, "id"), displayName: try row.decode(String.self, "display_name"),
                  email: try row.decode(String?.self, "email"), phone: try row.decode(String?.self, "phone"),
                  createdAt: try row.decode(Date.self, "created_at"), suspended: try row.decode(Bool.self, "suspended"),
                  coordinator: try row.decode(Bool.self, "coordinator"))
    }
}
