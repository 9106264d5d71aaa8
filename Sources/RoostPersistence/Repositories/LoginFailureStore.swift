import Foundation

/// Failed logins within a sliding window, per key (see sql/0002_login_failures.sql). Runs in a
/// tenant transaction.
public struct LoginFailureStore: Sendable {
    public init() {}

    /// How many failures `key` has within the last `window` seconds, and when the oldest of
    /// them leaves the window (seconds from now).
    public func recent(key: [UInt8], window: Int, on connection: PostgresConnection) throws -> (count: Int, clearsIn: Int) {
        let row = try connection.query("""
            SELECT count(*) AS n,
                   coalesce(ceil(extract(epoch FROM min(at) + \(window) * interval '1 second' - now())), 0)::bigint AS clears
            FROM login_failures
            WHERE tenant_id = roost_current_tenant() AND key_hash = \(Data(key)) AND at > now() - \(window) * interval '1 second'
            """).rows[0]
        return (try row.decode(Int.self, "n"), max(1, try row.decode(Int.self, "clears")))
    }

    /// Records a failure for each key and drops that key's failures older than the window.
    public func record(tenant: UUID, keys: [[UInt8]], window: Int, on connection: PostgresConnection) throws {
        for key in keys {
            try connection.query("""
                DELETE FROM login_failures
                WHERE tenant_id = \(tenant) AND key_hash = \(Data(key)) AND at <= now() - \(window) * interval '1 second'
                """)
            try connection.query("INSERT INTO login_failures (tenant_id, key_hash) VALUES (\(tenant), \(Data(key)))")
        }
    }

    /// Forgets an identifier's failures after a successful login.
    public func clear(key: [UInt8], on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM login_failures WHERE tenant_id = roost_current_tenant() AND key_hash = \(Data(key))")
    }
}
