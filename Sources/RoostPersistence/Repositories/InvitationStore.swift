import Foundation

/// An invitation to a group, addressed to exactly one email address or phone number.
public struct Invitation: Sendable, Equatable {
    public let id: UUID
    public let groupID: UUID
    public let email: String?
    public let phone: String?
    public let role: String
    public let status: String
    public let expiresAt: Date
    public let createdAt: Date
}

/// Invitations, in a tenant transaction. The token itself is never stored, only its SHA-256.
public struct InvitationStore: Sendable {
    public init() {}

    static let columns = "id, group_id, email, phone, role, status, expires_at, created_at"

    /// A pending invitation; a pending one to the same address surfaces as `uniqueViolation`.
    public func create(
        tenant: UUID, group: UUID, email: String?, phone: String?, role: String, tokenHash: [UInt8], invitedBy: UUID,
        lifetime: Int, on connection: PostgresConnection
    ) throws -> Invitation {
        try decode(connection.query("""
            INSERT INTO invitations (tenant_id, group_id, email, phone, role, token_hash, invited_by, expires_at)
            VALUES (\(tenant), \(group), \(email), \(phone), \(role), \(Data(tokenHash)), \(invitedBy),
                    now() + \(lifetime) * interval '1 second')
            RETURNING \(unsafeRaw: Self.columns)
            """).rows[0])
    }

    /// Whether someone with this address is already in the group.
    public func isMember(email: String?, phone: String?, group: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            SELECT 1 FROM memberships m JOIN users u ON u.tenant_id = m.tenant_id AND u.id = m.user_id
            WHERE m.group_id = \(group) AND ((\(email)::text IS NOT NULL AND u.email = \(email))
                                         OR (\(phone)::text IS NOT NULL AND u.phone = \(phone)))
            """).first != nil
    }

    /// Pending invitations and those answered in the last 30 days, newest first.
    public func list(group: UUID, on connection: PostgresConnection) throws -> [Invitation] {
        try connection.query("""
            SELECT \(unsafeRaw: Self.columns) FROM invitations
            WHERE group_id = \(group) AND (status = 'pending' OR created_at > now() - interval '30 days')
            ORDER BY created_at DESC, id
            """).rows.map(decode)
    }

    /// Revokes a pending invitation; false when there is no such pending invitation.
    public func revoke(_ id: UUID, group: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            UPDATE invitations SET status = 'revoked', responded_at = now()
            WHERE id = \(id) AND group_id = \(group) AND status = 'pending'
            """).affectedRows == 1
    }

    /// The invitation a token names, locked for the answer.
    public func find(tokenHash: [UInt8], on connection: PostgresConnection) throws -> Invitation? {
        try connection.query("""
            SELECT \(unsafeRaw: Self.columns) FROM invitations WHERE token_hash = \(Data(tokenHash)) FOR UPDATE
            """).first.map(decode)
    }

    public func markAccepted(_ id: UUID, by user: UUID, on connection: PostgresConnection) throws {
        try connection.query("""
            UPDATE invitations SET status = 'accepted', responded_at = now(), accepted_by = \(user) WHERE id = \(id)
            """)
    }

    /// A pending invitation past its time becomes `expired` when someone presents it.
    public func markExpired(_ id: UUID, on connection: PostgresConnection) throws {
        try connection.query("UPDATE invitations SET status = 'expired' WHERE id = \(id) AND status = 'pending'")
    }

    private func decode(_ row: PostgresRow) throws -> Invitation {
        Invitation(
            id: try row.decode(UUID.self, "id"), groupID: try row.decode(UUID.self, "group_id"),
            email: try row.decode(String?.self, "email"), phone: try row.decode(String?.self, "phone"),
            role: try row.decode(String.self, "role"), status: try row.decode(String.self, "status"),
            expiresAt: try row.decode(Date.self, "expires_at"), createdAt: try row.decode(Date.self, "created_at"))
    }
}
