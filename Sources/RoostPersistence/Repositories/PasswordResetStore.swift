import Foundation

/// A password reset code as stored: its hash and how it stands.
public struct PasswordReset: Sendable, Equatable {
    public let codeHash: [UInt8]
    public let attempts: Int
    public let expired: Bool
    public let used: Bool
}

/// Password reset requests and codes (sql/0018_password_reset_sessions.sql), in a tenant
/// transaction: one live code per account, single-use, of which only a hash is kept.
public struct PasswordResetStore: Sendable {
    public init() {}

    /// Queues a reset for the address, whoever has it (the scheduler does the rest).
    public func enqueue(tenant: UUID, email: String?, phone: String?, on connection: PostgresConnection) throws {
        let id = try connection.query("""
            INSERT INTO password_reset_requests (tenant_id, email, phone) VALUES (\(tenant), \(email), \(phone)) RETURNING id
            """).rows[0].decode(UUID.self, "id")
        try connection.query("INSERT INTO password_reset_jobs (request_id, tenant_id) VALUES (\(id), \(tenant))")
    }

    /// Takes a claimed request (its address) and deletes it with its job; nil when it is gone.
    public func take(_ id: UUID, on connection: PostgresConnection) throws -> (email: String?, phone: String?)? {
        try connection.query("DELETE FROM password_reset_jobs WHERE request_id = \(id)")
        return try connection.query("DELETE FROM password_reset_requests WHERE id = \(id) RETURNING email, phone").first.map {
            (try $0.decode(String?.self, "email"), try $0.decode(String?.self, "phone"))
        }
    }

    /// A new code valid for `lifetime` seconds, replacing the account's earlier one (which stops
    /// matching). Its wrong attempts carry over while the earlier code is live and unused.
    public func replace(tenant: UUID, user: UUID, codeHash: [UInt8], lifetime: Int, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO password_resets (tenant_id, user_id, code_hash, expires_at)
            VALUES (\(tenant), \(user), \(Data(codeHash)), now() + \(lifetime) * interval '1 second')
            ON CONFLICT (tenant_id, user_id) DO UPDATE
            SET code_hash = excluded.code_hash, created_at = now(), expires_at = excluded.expires_at, used_at = NULL,
                attempts = CASE WHEN password_resets.expires_at > now() AND password_resets.used_at IS NULL
                                THEN password_resets.attempts ELSE 0 END
            """)
    }

    /// The account's code, locked so concurrent guesses count one by one.
    public func pending(user: UUID, on connection: PostgresConnection) throws -> PasswordReset? {
        try connection.query("""
            SELECT code_hash, attempts, expires_at <= now() AS expired, used_at IS NOT NULL AS used
            FROM password_resets WHERE user_id = \(user) FOR UPDATE
            """).first.map {
            PasswordReset(codeHash: Array(try $0.decode(Data.self, "code_hash")), attempts: try $0.decode(Int.self, "attempts"),
                          expired: try $0.decode(Bool.self, "expired"), used: try $0.decode(Bool.self, "used"))
        }
    }

    /// A wrong guess; the code is used up at `maxAttempts`.
    public func failed(user: UUID, maxAttempts: Int, on connection: PostgresConnection) throws {
        try connection.query("""
            UPDATE password_resets SET attempts = attempts + 1,
                used_at = CASE WHEN attempts + 1 >= \(maxAttempts) THEN now() ELSE used_at END
            WHERE user_id = \(user)
            """)
    }

    /// The code worked: it never works again.
    public func use(user: UUID, on connection: PostgresConnection) throws {
        try connection.query("UPDATE password_resets SET used_at = now() WHERE user_id = \(user)")
    }
}
