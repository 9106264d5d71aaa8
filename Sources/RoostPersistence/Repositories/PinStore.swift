import Foundation

/// A user's check-in PINs, hashed (sql/0016_checkin_pins_duress.sql), in a tenant transaction.
public struct PinStore: Sendable {
    public init() {}

    /// The safe and duress PINs' hashes, or nil when the user has set none.
    public func pins(of user: UUID, on connection: PostgresConnection) throws -> (safe: String, duress: String)? {
        try connection.query("SELECT safe_hash, duress_hash FROM user_pins WHERE user_id = \(user)").first.map {
            (try $0.decode(String.self, "safe_hash"), try $0.decode(String.self, "duress_hash"))
        }
    }

    /// Sets (or replaces) both PINs at once.
    public func set(tenant: UUID, user: UUID, safe: String, duress: String, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO user_pins (tenant_id, user_id, safe_hash, duress_hash) VALUES (\(tenant), \(user), \(safe), \(duress))
            ON CONFLICT (tenant_id, user_id) DO UPDATE SET safe_hash = excluded.safe_hash, duress_hash = excluded.duress_hash, updated_at = now()
            """)
    }

    /// Removes both; false when there were none.
    public func delete(user: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("DELETE FROM user_pins WHERE user_id = \(user) RETURNING 1").first != nil
    }
}
