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

    /// Locks `keys` for the transaction (advisory locks, in one order), so concurrent sign-ins of
    /// one account, identifier or address count and record one after the other. Callers let
    /// one request a key at a time through per node, so few connections ever wait here.
    public func lock(tenant: UUID, keys: [[UInt8]], on connection: PostgresConnection) throws {
        for key in keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            try connection.query("""
                SELECT pg_advisory_xact_lock(hashtextextended(\(tenant.uuidString) || encode(\(Data(key)), 'hex'), 2002))
                """)
        }
    }

    /// Records a failure for each key, under `attempt` (so a sign-in that turns out right can
    /// take its rows back), and drops that key's failures older than the window.
    public func record(tenant: UUID, keys: [[UInt8]], attempt: UUID? = nil, window: Int, on connection: PostgresConnection) throws {
        for key in keys {
            try connection.query("""
                DELETE FROM login_failures
                WHERE tenant_id = \(tenant) AND key_hash = \(Data(key)) AND at <= now() - \(window) * interval '1 second'
                """)
            try connection.query("INSERT INTO login_failures (tenant_id, key_hash, attempt) VALUES (\(tenant), \(Data(key)), \(attempt))")
        }
    }

    /// Takes back the failures recorded for a sign-in attempt that succeeded.
    public func forget(attempt: UUID, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM login_failures WHERE tenant_id = roost_current_tenant() AND attempt = \(attempt)")
    }

    /// Forgets an identifier's failures after a successful login.
    public func clear(key: [UInt8], on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM login_failures WHERE tenant_id = roost_current_tenant() AND key_hash = \(Data(key))")
    }
}
