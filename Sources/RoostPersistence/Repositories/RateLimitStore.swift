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

/// Throttle counters (sql/0008_rate_limits.sql, sql/0029_rate_limit_windows.sql): a key's window
/// starts at its first hit and lasts `window` seconds, so a limit cannot be spent twice across
/// the hour, and the wait a refusal names is the time left in that key's window. A hit is one
/// conditional upsert: the counter's row lock makes concurrent hits count one after the other, so
/// two requests can never both take the last one. No tenant needed.
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
            SELECT \(unsafeRaw: Self.wait(limit)) AS wait FROM rate_limit_counters
            WHERE key_hash = \(Data(limit.key)) AND hits >= \(limit.limit)
              AND window_start > now() - make_interval(secs => \(limit.window))
            """).first.map { max(1, try $0.decode(Int.self, "wait")) }
    }

    /// Counts a hit on every limit inside the caller's transaction, or throws `UsedUp` (the
    /// caller's transaction then rolls back, and with it the hits counted so far).
    public func count(_ limits: [RateLimit], on connection: PostgresConnection) throws {
        // One order for every caller, so two requests sharing keys cannot deadlock.
        let ordered = limits.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        for limit in ordered {
            // A row whose window has passed starts a new one with this hit.
            let counted = try connection.query("""
                INSERT INTO rate_limit_counters AS counter (key_hash, window_start, hits)
                SELECT \(Data(limit.key)), now(), 1 WHERE \(limit.limit) > 0
                ON CONFLICT (key_hash) DO UPDATE SET
                    window_start = CASE WHEN counter.window_start <= now() - make_interval(secs => \(limit.window))
                                        THEN now() ELSE counter.window_start END,
                    hits = CASE WHEN counter.window_start <= now() - make_interval(secs => \(limit.window))
                                THEN 1 ELSE counter.hits + 1 END
                    WHERE counter.window_start <= now() - make_interval(secs => \(limit.window)) OR counter.hits < \(limit.limit)
                RETURNING hits
                """).first != nil
            if !counted {
                let wait = try connection.query("""
                    SELECT coalesce((SELECT \(unsafeRaw: Self.wait(limit)) FROM rate_limit_counters WHERE key_hash = \(Data(limit.key))),
                                    \(limit.window)) AS wait
                    """).rows[0].decode(Int.self, "wait")
                throw UsedUp(retryAfter: max(1, wait))
            }
        }
    }

    /// Removes counters whose window ended more than a day ago (no throttle's window is longer
    /// than a day), at most `limit` of them: how many went.
    @discardableResult
    public func sweep(limit: Int = 10_000, on connection: PostgresConnection) throws -> Int {
        try connection.query("""
            DELETE FROM rate_limit_counters WHERE key_hash IN (
                SELECT key_hash FROM rate_limit_counters WHERE window_start < now() - interval '2 days' LIMIT \(limit))
            """).affectedRows
    }

    /// The whole seconds left in the counter row's window, as SQL over that row.
    private static func wait(_ limit: RateLimit) -> String {
        "ceil(extract(epoch FROM window_start + make_interval(secs => \(limit.window)) - now()))::bigint"
    }
}
