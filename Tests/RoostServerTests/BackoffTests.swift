@testable import RoostServer
import Testing

/// The one backoff: the base after the first failure, doubling after each one more, capped,
/// and with jitter a share of that within its range.
struct BackoffTests {
    @Test func itDoublesFromTheBaseUpToTheCap() {
        let backoff = Backoff(base: 2, cap: 60)
        #expect((1...7).map { backoff.seconds(afterFailures: $0) } == [2, 4, 8, 16, 32, 60, 60])
        #expect(backoff.seconds(afterFailures: 0) == 2, "no failure yet waits the base, not less")
    }

    @Test func jitterWaitsAShareOfTheDelayWithinItsRange() {
        let backoff = Backoff(base: 10, cap: 3600, jitter: 0.5...1.0)
        for failures in 1...12 {
            let full = Backoff(base: 10, cap: 3600).seconds(afterFailures: failures)
            let waited = backoff.seconds(afterFailures: failures)
            #expect(waited >= full * 0.5 && waited <= full, "\(failures): \(waited) of \(full)")
        }
    }
}
