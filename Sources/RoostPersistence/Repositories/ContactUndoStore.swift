import Foundation

/// A confirmed change of address that its old address may still undo (API.md "Wave 3":
/// `POST /v1/me/contacts/undo`).
public struct ContactUndo: Sendable, Equatable {
    public let userID: UUID
    public let channel: String
    public let oldAddress: String
    public let oldVerified: Bool
    public let newAddress: String

    public init(userID: UUID, channel: String, oldAddress: String, oldVerified: Bool, newAddress: String) {
        self.userID = userID
        self.channel = channel
        self.oldAddress = oldAddress
        self.oldVerified = oldVerified
        self.newAddress = newAddress
    }
}

/// Undo links of address changes, in a tenant transaction; only the token's hash is kept.
public struct ContactUndoStore: Sendable {
    public init() {}

    public func create(tenant: UUID, tokenHash: [UInt8], undo: ContactUndo, lifetime: Int, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO contact_undos (tenant_id, token_hash, user_id, channel, old_address, old_verified, new_address, expires_at)
            VALUES (\(tenant), \(Data(tokenHash)), \(undo.userID), \(undo.channel), \(undo.oldAddress), \(undo.oldVerified), \(undo.newAddress),
                    now() + \(lifetime) * interval '1 second')
            """)
    }

    /// The live undo for this token, marked used in the same statement (nil when unknown,
    /// expired or used: a link works once).
    public func take(tokenHash: [UInt8], on connection: PostgresConnection) throws -> ContactUndo? {
        try connection.query("""
            UPDATE contact_undos SET used_at = now()
            WHERE token_hash = \(Data(tokenHash)) AND used_at IS NULL AND expires_at > now()
            RETURNING user_id, channel, old_address, old_verified, new_address
            """).first.map {
            ContactUndo(userID: try $0.decode(UUID.self, "user_id"), channel: try $0.decode(String.self, "channel"),
                        oldAddress: try $0.decode(String.self, "old_address"), oldVerified: try $0.decode(Bool.self, "old_verified"),
                        newAddress: try $0.decode(String.self, "new_address"))
        }
    }
}
