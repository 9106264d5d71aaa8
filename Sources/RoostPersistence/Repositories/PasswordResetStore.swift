import Foundation

/// A password reset code as stored: its hash and how it stands.
public struct PasswordReset: Sendable, Equatable {
    public let codeHash: [UInt8]
    public let attempts: Int
    public let expired: Bool
    public let used: Bool
}

/// A reset request claimed by a scheduler round.
public struct ClaimedPasswordReset: Sendable, Equatable {
    public let id: UUID
    public let tenant: UUID
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

    /// Due requests across tenants (or of one), locked for the claiming transaction.
    public func claimDue(limit: Int, tenant: UUID? = nil, on connection: PostgresConnection) throws -> [ClaimedPasswordReset] {
        try connection.query("""
            SELECT request_id, tenant_id FROM password_reset_jobs
            WHERE due_at <= now() AND parked_at IS NULL AND (\(tenant)::uuid IS NULL OR tenant_id = \(tenant))
            ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
            """).rows.map { ClaimedPasswordReset(id: try $0.decode(UUID.self, "request_id"), tenant: try $0.decode(UUID.self, "tenant_id")) }
    }

    /// Takes a claimed request (its address) and deletes it with its job; nil when it is gone.
    public func take(_ id: UUID, on connection: PostgresConnection) throws -> (email: String?, phone: String?)? {
        try connection.query("DELETE FROM password_reset_jobs WHERE request_id = \(id)")
        return try connection.query("DELETE FROM password_reset_requests WHERE id = \(id) RETURNING email, phone").first.map {
            (try $0.decode(String?.self, "email"), try $0.decode(String?.self, "phone"))
        }
    }

    /// A reset for the account with this email or phone, if there is one, in one statement: the
    /// code's hash (`sha256("password-reset:<user id>:<code>")`, as `PasswordRoutes.hash`
    /// writes it) replaces the account's earlier one, and the code is queued to the address.
    public func request(tenant: UUID, email: String?, phone: String?, code: String, lifetime: Int, on connection: PostgresConnection) throws {
        try connection.query("""
            WITH account AS (
                SELECT id, display_name FROM users
                WHERE deleted_at IS NULL AND ((\(email)::text IS NOT NULL AND email = \(email)) OR (\(phone)::text IS NOT NULL AND phone = \(phone)))
                LIMIT 1),
            reset AS (
                INSERT INTO password_resets (tenant_id, user_id, code_hash, expires_at)
                SELECT \(tenant), id, sha256(convert_to('password-reset:' || id::text || ':' || \(code)::text, 'UTF8')),
                       now() + \(lifetime) * interval '1 second'
                FROM account
                ON CONFLICT (tenant_id, user_id) DO UPDATE
                SET code_hash = excluded.code_hash, created_at = now(), expires_at = excluded.expires_at, used_at = NULL,
                    attempts = CASE WHEN password_resets.expires_at > now() AND password_resets.used_at IS NULL
                                    THEN password_resets.attempts ELSE 0 END
                RETURNING user_id),
            queued AS (
                INSERT INTO outbox (tenant_id, channel, recipient, template, data)
                SELECT \(tenant), \(email == nil ? "sms" : "email"), \(email ?? phone ?? ""), 'password_reset',
                       jsonb_build_object('code', \(code)::text, 'display_name', a.display_name, 'expires_in_s', \(lifetime)::int)
                FROM account a JOIN reset r ON r.user_id = a.id
                RETURNING id)
            INSERT INTO outbox_jobs (outbox_id, tenant_id) SELECT id, \(tenant) FROM queued
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
