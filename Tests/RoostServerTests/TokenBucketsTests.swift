import Foundation
@testable import RoostServer
import Synchronization
import Testing

/// The one in-memory token bucket (posts per account, refused DC-09 frames per address), on a
/// clock the test moves.
struct TokenBucketsTests {
    final class Clock: Sendable {
        let seconds = Mutex(100.0)
        func advance(_ by: Double) { seconds.withLock { $0 += by } }
    }

    @Test func takeSpendsOnlyWhatIsThereAndSaysHowLongToWait() {
        let clock = Clock()
        let buckets = TokenBuckets<String>(perMinute: 6, burst: 2, now: { clock.seconds.withLock { $0 } })
        #expect(buckets.take("ann") == nil && buckets.take("ann") == nil)
        #expect(buckets.take("ann") == 10, "a token every 10 s")
        #expect(buckets.take("ben") == nil, "one key's spending is its own")
        clock.advance(4)
        #expect(buckets.take("ann") == 6, "a refused take spends nothing")
        clock.advance(6)
        #expect(buckets.take("ann") == nil)
        clock.advance(600)
        #expect(buckets.take("ann") == nil && buckets.take("ann") == nil && buckets.take("ann") == 10, "never more than the burst")
    }

    @Test func chargeGoesBelowEmptyAndAllowsOnlyLooks() {
        let clock = Clock()
        let buckets = TokenBuckets<String>(perMinute: 60, burst: 1, now: { clock.seconds.withLock { $0 } })
        #expect(buckets.allows("198.51.100.7") && buckets.allows("198.51.100.7"))
        buckets.charge("198.51.100.7")
        buckets.charge("198.51.100.7")
        buckets.charge("198.51.100.7")
        clock.advance(2)
        #expect(!buckets.allows("198.51.100.7"), "three refusals at once cost three seconds, not one")
        clock.advance(1)
        #expect(buckets.allows("198.51.100.7"))
    }

    @Test func pastItsCapacityFullBucketsAreForgottenFirst() {
        let clock = Clock()
        let buckets = TokenBuckets<Int>(perMinute: 60, burst: 5, capacity: 3, now: { clock.seconds.withLock { $0 } })
        for _ in 0..<10 { buckets.charge(1) }
        buckets.charge(2)
        buckets.charge(3)
        clock.advance(1)  // 2 and 3 are full again; 1 is still short
        buckets.charge(4)
        #expect(!buckets.allows(1), "the short bucket was kept")
    }
}
