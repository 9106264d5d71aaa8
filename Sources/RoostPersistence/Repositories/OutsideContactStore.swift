import Foundation

/// Someone outside the app who is sent messages by email or SMS: a group's escalation contact
/// (named by its managers, sql/0011) or a member's emergency contact (sql/0015). Each has one
/// address and confirms it once, through the link of the one message sent when they are added;
/// nothing else is sent to them before. Only SHA-256 of the link's token is stored.
public struct OutsideContact: Sendable, Equatable {
    public let id: UUID
    /// The group (escalation contacts) or the user (emergency contacts) that named them.
    public let ownerID: UUID
    public let name: String
    public let email: String?
    public let phone: String?
    public let confirmed: Bool
    public let createdAt: Date
}

/// One list of outside contacts, in a tenant transaction: the same rows and rules for both
/// kinds, each in its own table keyed by its owner.
public struct OutsideContactStore: Sendable {
    let table: String
    let ownerColumn: String

    /// A group's escalation contacts.
    public static let escalation = OutsideContactStore(table: "escalation_contacts", ownerColumn: "group_id")
    /// A member's emergency contacts (check-ins).
    public static let emergency = OutsideContactStore(table: "emergency_contacts", ownerColumn: "user_id")

    private var columns: String { "id, \(ownerColumn) AS owner_id, name, email, phone, confirmed_at IS NOT NULL AS confirmed, created_at" }

    /// A new, unconfirmed contact whose link carries the token hashed here; one with the same
    /// address for the same owner surfaces as `uniqueViolation`.
    public func add(tenant: UUID, owner: UUID, name: String, email: String?, phone: String?, tokenHash: [UInt8], lifetime: Int,
                    by user: UUID, on connection: PostgresConnection) throws -> OutsideContact {
        try decode(connection.query("""
            INSERT INTO \(unsafeRaw: table) (tenant_id, \(unsafeRaw: ownerColumn), name, email, phone, token_hash, token_expires_at, created_by)
            VALUES (\(tenant), \(owner), \(name), \(email), \(phone), \(Data(tokenHash)), now() + \(lifetime) * interval '1 second', \(user))
            RETURNING \(unsafeRaw: columns)
            """).rows[0])
    }

    public func count(owner: UUID, on connection: PostgresConnection) throws -> Int {
        try connection.query("SELECT count(*) AS n FROM \(unsafeRaw: table) WHERE \(unsafeRaw: ownerColumn) = \(owner)").rows[0].decode(Int.self, "n")
    }

    /// The owner's contacts, oldest first, after `after` (a contact id) when given.
    public func contacts(owner: UUID, after: UUID?, limit: Int, on connection: PostgresConnection) throws -> [OutsideContact] {
        try connection.query("""
            SELECT \(unsafeRaw: columns) FROM \(unsafeRaw: table)
            WHERE \(unsafeRaw: ownerColumn) = \(owner)
              AND (\(after)::uuid IS NULL OR (created_at, id) > (SELECT created_at, id FROM \(unsafeRaw: table) WHERE id = \(after)))
            ORDER BY created_at, id LIMIT \(limit)
            """).rows.map(decode)
    }

    /// The owner's confirmed contacts (among `ids` when given): whom messages reach.
    public func confirmed(owner: UUID, among ids: [UUID]? = nil, on connection: PostgresConnection) throws -> [OutsideContact] {
        try connection.query("""
            SELECT \(unsafeRaw: columns) FROM \(unsafeRaw: table)
            WHERE \(unsafeRaw: ownerColumn) = \(owner) AND confirmed_at IS NOT NULL AND (\(ids)::uuid[] IS NULL OR id = ANY (\(ids)::uuid[]))
            ORDER BY created_at, id
            """).rows.map(decode)
    }

    /// Which of `ids` are the owner's contacts (confirmed or not).
    public func existing(owner: UUID, among ids: [UUID], on connection: PostgresConnection) throws -> Set<UUID> {
        Set(try connection.query("""
            SELECT id FROM \(unsafeRaw: table) WHERE \(unsafeRaw: ownerColumn) = \(owner) AND id = ANY (\(ids)::uuid[])
            """).rows.map { try $0.decode(UUID.self, "id") })
    }

    /// Removes a contact; false when the owner has none with that id.
    public func delete(_ id: UUID, owner: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("DELETE FROM \(unsafeRaw: table) WHERE id = \(id) AND \(unsafeRaw: ownerColumn) = \(owner)").affectedRows == 1
    }

    /// What a confirmation link's token finds in the transaction's tenant.
    public enum Confirmation: Sendable, Equatable {
        case confirmed(OutsideContact)
        /// Confirmed before, or the link ran out: 410.
        case gone
        /// No such token here: 404.
        case unknown
    }

    /// Confirms the contact holding this token, once, before the link expires.
    public func confirm(tokenHash: [UInt8], on connection: PostgresConnection) throws -> Confirmation {
        if let row = try connection.query("""
            UPDATE \(unsafeRaw: table) SET confirmed_at = now()
            WHERE token_hash = \(Data(tokenHash)) AND confirmed_at IS NULL AND token_expires_at > now()
            RETURNING \(unsafeRaw: columns)
            """).first {
            return .confirmed(try decode(row))
        }
        return try connection.query("SELECT 1 FROM \(unsafeRaw: table) WHERE token_hash = \(Data(tokenHash))").first == nil ? .unknown : .gone
    }

    private func decode(_ row: PostgresRow) throws -> OutsideContact {
        OutsideContact(id: try row.decode(UUID.self, "id"), ownerID: try row.decode(UUID.self, "owner_id"), name: try row.decode(String.self, "name"),
                       email: try row.decode(String?.self, "email"), phone: try row.decode(String?.self, "phone"),
                       confirmed: try row.decode(Bool.self, "confirmed"), createdAt: try row.decode(Date.self, "created_at"))
    }
}
