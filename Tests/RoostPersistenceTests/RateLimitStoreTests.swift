import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

/// Throttle counters (`RateLimitStore`): a key's window starts at its first hit, so a limit is
/// spent at most once per window wherever the clock's hour falls; a refusal names the time left
/// in that key's window; a passed window starts again at the next hit.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct RateLimitStoreTests {
    let store = RateLimitStore()

    /// Moves the key's window `seconds` into the past, as the clock would.
    func age(_ limit: RateLimit, by seconds: Int, on connection: PostgresConnection) throws {
        try connection.query("""
            UPDATE rate_limit_counters SET window_start = window_start - make_interval(secs => \(seconds))
            WHERE key_hash = \(Data(limit.key))
            """)
    }

    @Test func aLimitIsSpentOncePerWindowStartingAtTheFirstHit() throws {
        let connection = try TestDatabase.migratedConnection()
        let limit = RateLimit("test:\(UUID())", limit: 2, window: 3600)
        #expect(try store.hit([limit], on: connection) == nil)
        #expect(try store.usedUp(limit, on: connection) == nil)
        #expect(try store.hit([limit], on: connection) == nil)
        let wait = try #require(try store.hit([limit], on: connection))
        #expect(wait > 3500 && wait <= 3600, "\(wait)")
        let left = try #require(try store.usedUp(limit, on: connection))
        #expect(left <= wait && left >= wait - 5, "\(left)")

        // Half an hour on, the window that began at the first hit still holds.
        try age(limit, by: 1800, on: connection)
        let later = try #require(try store.hit([limit], on: connection))
        #expect(later > 1700 && later <= 1800, "\(later)")

        // Past its end, the next hit opens a new window and counts one.
        try age(limit, by: 1800, on: connection)
        #expect(try store.usedUp(limit, on: connection) == nil)
        #expect(try store.hit([limit], on: connection) == nil)
        #expect(try store.hit([limit], on: connection) == nil)
        #expect(try store.hit([limit], on: connection) != nil)
    }

    @Test func aRefusalCountsNothingOnTheOtherLimitsAndAZeroLimitRefusesAll() throws {
        let connection = try TestDatabase.migratedConnection()
        let open = RateLimit("test:\(UUID())", limit: 5, window: 60)
        let full = RateLimit("test:\(UUID())", limit: 1, window: 60)
        #expect(try store.hit([full], on: connection) == nil)
        for _ in 0..<3 { #expect(try store.hit([open, full], on: connection) != nil) }
        let hits = try connection.query("SELECT hits FROM rate_limit_counters WHERE key_hash = \(Data(open.key))").first?.decode(Int.self, "hits")
        #expect(hits == nil, "the refused hits rolled back")
        let closed = RateLimit("test:\(UUID())", limit: 0, window: 60)
        #expect(try store.hit([closed], on: connection) == 60)
    }

    @Test func theSweepRemovesOnlyCountersIdleForDays() throws {
        let connection = try TestDatabase.migratedConnection()
        let idle = RateLimit("test:\(UUID())", limit: 1, window: 86_400)
        let recent = RateLimit("test:\(UUID())", limit: 1, window: 86_400)
        #expect(try store.hit([idle], on: connection) == nil)
        #expect(try store.hit([recent], on: connection) == nil)
        try age(idle, by: 3 * 86_400, on: connection)
        try age(recent, by: 86_400 + 60, on: connection)
        #expect(try store.sweep(on: connection) >= 1)
        let left = try connection.query("""
            SELECT count(*) FILTER (WHERE key_hash = \(Data(idle.key))) AS idle,
                   count(*) FILTER (WHERE key_hash = \(Data(recent.key))) AS recent
            FROM rate_limit_counters
            """).rows[0]
        #expect(try left.decode(Int.self, "idle") == 0)
        #expect(try left.decode(Int.self, "recent") == 1)
    }
}
