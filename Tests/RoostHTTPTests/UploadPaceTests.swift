import Testing
@testable import RoostHTTP

/// The minimum upload rate on its own: averaged over the last whole window, time the server was
/// behind left out.
struct UploadPaceTests {
    static let second: UInt64 = 1_000_000_000

    func pace(minimum: Int = 8192) -> UploadPace {
        UploadPace(minimumBytesPerSecond: minimum, windowNanoseconds: 30 * Self.second, now: 0)
    }

    /// The verdicts at each of `seconds` (a tick each).
    func verdicts(_ pace: inout UploadPace, at seconds: [UInt64]) -> [Bool] {
        seconds.map { pace.isTooSlow(now: $0 * Self.second) }
    }

    @Test func aSteadyUploadAtTheMinimumIsNeverTooSlow() {
        var pace = pace()
        var cut: [UInt64] = []
        for tick in UInt64(1)...60 {
            pace.receive(8192 * 5)
            if pace.isTooSlow(now: tick * 5 * Self.second) { cut.append(tick) }
        }
        #expect(cut.isEmpty)
    }

    @Test func aByteEveryTwentySecondsIsCutOnceAWholeWindowHasPassed() {
        var pace = pace()
        pace.receive(1)
        #expect(verdicts(&pace, at: [5, 10, 15, 20, 25]) == [false, false, false, false, false], "less than a window seen")
        pace.receive(1)
        #expect(verdicts(&pace, at: [30]) == [true])
    }

    @Test func aBurstBuysNoTimeOnceItLeavesTheWindow() {
        var pace = pace()
        pace.receive(10 << 20)
        #expect(verdicts(&pace, at: [5, 10, 15, 20, 25, 30]) == [false, false, false, false, false, false])
        // Nothing more: the window from 5 s to 35 s holds no bytes.
        #expect(verdicts(&pace, at: [35]) == [true])
    }

    @Test func timeTheServerWasBehindIsNotCounted() {
        var pace = pace()
        pace.receive(100_000)
        // The server stopped reading for a minute; the window starts again when it resumes.
        pace.restart(now: 60 * Self.second)
        #expect(verdicts(&pace, at: [65, 70, 75, 80, 85]) == [false, false, false, false, false])
        #expect(verdicts(&pace, at: [90]) == [true])
        var off = self.pace(minimum: 0)
        #expect(verdicts(&off, at: [3600]) == [false], "0: no minimum")
    }
}
