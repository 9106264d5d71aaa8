import Foundation
import RoostProtocol

/// One throttle: at most `limit` hits of `key` in each window of `window` seconds.
public struct RateLimit: Sendable {
    public let key: [UInt8]
    public let limit: Int
    public let window: Int

    /// `key` is hashed here: callers name it in clear ("invite-sender:<tenant>:<user>").
    public init(_ key: String, limit: Int, window: Int) {
        self.key = Digest.sha256(Array(key.utf8))
        self.limit = limit
        self.window = max(1, window)
    }
}

/// Fixed-window counters for throttles (sql/0008_rate_limits.sql). A hit is one conditional
/// upsert: the counter's row lock makes concurrent hits count one after the other, so two
/// requests can never both take the last one. No tenant needed.
public struct RateLimitStore: Sendable {
    public init() {}

    /// A limit was used up: seconds until its window ends.
    public struct UsedUp: Error, Sendable {
        public let retryAfter: Int
    }

    /// Counts a hit on every limit, or on none when any is used up: nil when counted, else the
    /// seconds until the fullest one's window ends. Runs its own transaction.
    public func hit(_ limits: [RateLimit], on connection: PostgresConnection) throws -> Int? {
        do {
            try connection.withTransaction { try count(limits, on: $0) }
            return nil
        } catch let used as UsedUp {
            return used.retryAfter
        }
    }

    /// Whether `limit` is used up in its current window, without counting: the seconds until the
    /// window ends, or nil. For limits that count only failures, checked before the attempt.
    public func usedUp(_ limit: RateLimit, on connection: PostgresConnection) throws -> Int? {
        try connection.query("""
            SELECT ceil(\(limit.window) - mod(extract(epoch FROM now())::numeric, \(limit.window)))::bigint AS wait
            FROM rate_limit_counters
            WHERE key_hash = \(Data(limit.key)) AND hits >= \(limit.limit)
              AND window_start = to_timestamp(floor(extract(epoch FROM now()) / \(limit.window)) * \(limit.window))
            """).first.map { max(1, try $0.decode(Int.self, "wait")) }
    }

    /// Counts a hit on every limit inside the caller's transaction, or throws `UsedUp` (the
    /// caller's transaction then rolls back, and with it the hits counted so far).
    public func count(_ limits: [RateLimit], on connection: PostgresConnection) throws {
        // One order for every caller, so two requests sharing keys cannot deadlock.
        let ordered = limits.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        for limit in ordered {
            let counted = try connection.query("""
                WITH slot AS (
                    SELECT to_timestamp(floor(extract(epoch FROM now()) / \(limit.window)) * \(limit.window)) AS start),
                stale AS (
                    DELETE FROM rate_limit_counters WHERE key_hash = \(Data(limit.key)) AND window_start < (SELECT start FROM slot))
                INSERT INTO rate_limit_counters (key_hash, window_start, hits)
                SELECT \(Data(limit.key)), start, 1 FROM slot WHERE \(limit.limit) > 0
                ON CONFLICT (key_hash, window_start) DO UPDATE SET hits = rate_limit_counters.hits + 1
                    WHERE rate_limit_counters.hits < \(limit.limit)
                RETURNING hits
                """).first != nil
            if !counted {
                let wait = try connection.query("""
                    SELECT ceil(\(limit.window) - mod(extract(epoch FROM now())::numeric, \(limit.window)))::bigint AS wait
                    """).rows[0].decode(Int.self, "wait")
                throw UsedUp(retryAfter: max(1, wait))
            }
        }
    }
}
