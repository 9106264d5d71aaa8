import Foundation

/// A pending proof that a user controls an email address or phone number: a 6-digit code, of
/// which only a hash is stored (API.md "Accounts", `/v1/me/contacts/...`).
public struct ContactVerification: Sendable, Equatable {
    public let channel: String
    public let address: String
    public let codeHash: [UInt8]
    public let attempts: Int
    public let expired: Bool
    /// Seconds since the code was sent.
    public let age: Int
}

/// Contact verification codes, in a tenant transaction. One pending code per user and channel:
/// asking again replaces it.
public struct ContactVerificationStore: Sendable {
    public init() {}

    /// Stores a new code valid for `lifetime` seconds, replacing any earlier one. A resend while
    /// the earlier code is still live keeps its wrong attempts and its expiry: asking for a new
    /// code never buys more guesses.
    public func replace(tenant: UUID, user: UUID, channel: String, address: String, codeHash: [UInt8], lifetime: Int,
                        on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO contact_verifications (tenant_id, user_id, channel, address, code_hash, expires_at)
            VALUES (\(tenant), \(user), \(channel), \(address), \(Data(codeHash)), now() + \(lifetime) * interval '1 second')
            ON CONFLICT (tenant_id, user_id, channel) DO UPDATE
            SET address = excluded.address, code_hash = excluded.code_hash,
                attempts = CASE WHEN contact_verifications.expires_at > now() THEN contact_verifications.attempts ELSE 0 END,
                created_at = now(),
                expires_at = CASE WHEN contact_verifications.expires_at > now() THEN contact_verifications.expires_at
                                  ELSE excluded.expires_at END
            """)
    }

    /// The pending code for a channel, locked so concurrent guesses are counted one by one.
    public func pending(user: UUID, channel: String, on connection: PostgresConnection) throws -> ContactVerification? {
        try connection.query("""
            SELECT channel, address, code_hash, attempts, expires_at <= now() AS expired,
                   extract(epoch FROM now() - created_at)::int AS age
            FROM contact_verifications WHERE user_id = \(user) AND channel = \(channel) FOR UPDATE
            """).first.map {
            ContactVerification(
                channel: try $0.decode(String.self, "channel"), address: try $0.decode(String.self, "address"),
                codeHash: Array(try $0.decode(Data.self, "code_hash")), attempts: try $0.decode(Int.self, "attempts"),
                expired: try $0.decode(Bool.self, "expired"), age: try $0.decode(Int.self, "age"))
        }
    }

    public func recordAttempt(user: UUID, channel: String, on connection: PostgresConnection) throws {
        try connection.query("""
            UPDATE contact_verifications SET attempts = attempts + 1 WHERE user_id = \(user) AND channel = \(channel)
            """)
    }

    public func remove(user: UUID, channel: String, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM contact_verifications WHERE user_id = \(user) AND channel = \(channel)")
    }
}
