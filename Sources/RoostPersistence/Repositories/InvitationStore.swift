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

    /// A pending invitation past its time reads as `expired`: expiry needs no sweeper.
    static let columns = """
        id, group_id, email, phone, role, created_at, expires_at,
        CASE WHEN status = 'pending' AND expires_at <= now() THEN 'expired' ELSE status END AS status
        """

    /// A pending invitation; a pending one to the same address surfaces as `uniqueViolation`.
    public func create(
        tenant: UUID, group: UUID, email: String?, phone: String?, role: String, tokenHash: [UInt8], invitedBy: UUID,
        lifetime: Int, on connection: PostgresConnection
    ) throws -> Invitation {
        // A lapsed invitation to the same address no longer blocks a new one.
        try connection.query("""
            UPDATE invitations SET status = 'expired'
            WHERE group_id = \(group) AND status = 'pending' AND expires_at <= now()
              AND (email = \(email) OR phone = \(phone))
            """)
        return try decode(connection.query("""
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

    /// Pending invitations and those answered in the last 30 days, newest first: at most
    /// `limit` of them after `after`.
    public func list(group: UUID, after: NewestFirst?, limit: Int, on connection: PostgresConnection) throws -> [Invitation] {
        try connection.query("""
            SELECT \(unsafeRaw: Self.columns) FROM invitations
            WHERE group_id = \(group) AND (status = 'pending' OR created_at > now() - interval '30 days')
              AND (\(after?.micros)::int8 IS NULL
                   OR (created_at, id) < ('epoch'::timestamptz + \(after?.micros)::int8 * interval '1 microsecond', \(after?.id)::uuid))
            ORDER BY created_at DESC, id DESC LIMIT \(limit)
            """).rows.map(decode)
    }

    /// Revokes a pending invitation; false when there is no such pending invitation.
    public func revoke(_ id: UUID, group: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            UPDATE invitations SET status = 'revoked', responded_at = now()
            WHERE id = \(id) AND group_id = \(group) AND status = 'pending'
            """).affectedRows == 1
    }

    /// A pending, unexpired invitation gets a new token (the old one stops working); false when
    /// it is no longer pending.
    public func reissue(_ id: UUID, tokenHash: [UInt8], on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            UPDATE invitations SET token_hash = \(Data(tokenHash)) WHERE id = \(id) AND status = 'pending' AND expires_at > now()
            """).affectedRows == 1
    }

    /// The invitation a token names, locked for the answer.
    public func find(tokenHash: [UInt8], on connection: PostgresConnection) throws -> Invitation? {
        try connection.query("""
            SELECT \(unsafeRaw: Self.columns) FROM invitations WHERE token_hash = \(Data(tokenHash)) FOR UPDATE
            """).first.map(decode)
    }

    /// The invitation with this id, locked for the answer.
    public func find(id: UUID, on connection: PostgresConnection) throws -> Invitation? {
        try connection.query("""
            SELECT \(unsafeRaw: Self.columns) FROM invitations WHERE id = \(id) FOR UPDATE
            """).first.map(decode)
    }

    /// Live pending invitations to these addresses (a user's verified ones), with their group's
    /// name, newest first: at most `limit` of them after `after`.
    public func addressed(email: String?, phone: String?, after: NewestFirst? = nil, limit: Int = 50,
                          on connection: PostgresConnection) throws -> [(Invitation, groupName: String)] {
        guard email != nil || phone != nil else { return [] }
        return try connection.query("""
            SELECT i.id, i.group_id, i.email, i.phone, i.role, i.status, i.expires_at, i.created_at, g.name AS group_name
            FROM invitations i JOIN groups g ON g.tenant_id = i.tenant_id AND g.id = i.group_id
            WHERE i.status = 'pending' AND i.expires_at > now()
              AND ((\(email)::text IS NOT NULL AND i.email = \(email)) OR (\(phone)::text IS NOT NULL AND i.phone = \(phone)))
              AND (\(after?.micros)::int8 IS NULL
                   OR (i.created_at, i.id) < ('epoch'::timestamptz + \(after?.micros)::int8 * interval '1 microsecond', \(after?.id)::uuid))
            ORDER BY i.created_at DESC, i.id DESC LIMIT \(limit)
            """).rows.map { (try decode($0), try $0.decode(String.self, "group_name")) }
    }

    public func markDeclined(_ id: UUID, on connection: PostgresConnection) throws {
        try connection.query("UPDATE invitations SET status = 'declined', responded_at = now() WHERE id = \(id)")
    }

    public func markAccepted(_ id: UUID, by user: UUID, on connection: PostgresConnection) throws {
        try connection.query("""
            UPDATE invitations SET status = 'accepted', responded_at = now(), accepted_by = \(user) WHERE id = \(id)
            """)
    }

    private func decode(_ row: PostgresRow) throws -> Invitation {
        Invitation(
            id: try row.decode(UUID.self, "id"), groupID: try row.decode(UUID.self, "group_id"),
            email: try row.decode(String?.self, "email"), phone: try row.decode(String?.self, "phone"),
            role: try row.decode(String.self, "role"), status: try row.decode(String.self, "status"),
            expiresAt: try row.decode(Date.self, "expires_at"), createdAt: try row.decode(Date.self, "created_at"))
    }
}
