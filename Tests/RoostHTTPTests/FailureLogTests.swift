import Foundation
@testable import RoostHTTP
import Synchronization
import Testing

/// A repeating failure is one warning, a "still failing" at most every 30 s, and one "recovered"
/// line; numbers in log fields are JSON numbers. On a clock the test moves.
struct FailureLogTests {
    final class Lines: Sendable {
        let all = Mutex<[String]>([])
        /// Each line as JSON.
        var entries: [[String: Any]] {
            all.withLock { $0 }.map { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) ?? ["unparsed": $0] }
        }
        func add(_ line: String) { all.withLock { $0.append(line) } }
    }

    @Test func aFailureEveryHalfSecondForTwelveSecondsIsTwoLinesThenOneWhenItRecovers() {
        let lines = Lines()
        let clock = Mutex<Double>(1000)
        let failures = FailureLog(log: Log(level: .info, capture: { lines.add($0) }), interval: 30, now: { clock.withLock { $0 } })
        for _ in 0..<24 {
            failures.failed("outbox: a claim failed; retrying", ["error": "PostgreSQL cannot be reached"])
            clock.withLock { $0 += 0.5 }
        }
        #expect(lines.entries.count == 1, "one warning for 24 failures in 12 s")
        #expect(lines.entries.first?["msg"] as? String == "outbox: a claim failed; retrying" && lines.entries.first?["level"] as? String == "warning")
        // Past 30 s, one reminder with the count; another kind of failure has its own streak.
        clock.withLock { $0 += 30 }
        failures.failed("outbox: a claim failed; retrying")
        failures.failed("sessions: an expiry round failed; retrying")
        failures.failed("outbox: a claim failed; retrying")
        #expect(lines.entries.count == 3)
        #expect(lines.entries[1]["msg"] as? String == "outbox: a claim failed; retrying (still failing: 25 times in 42 s)")
        #expect(lines.entries[1]["failures"] as? Int == 25 && lines.entries[1]["failing_s"] as? Int == 42)
        failures.succeeded("outbox: a claim failed; retrying")
        failures.succeeded("outbox: a claim failed; retrying")
        #expect(lines.entries.count == 4, "recovered once")
        #expect(lines.entries[3]["msg"] as? String == "outbox: a claim failed; retrying: recovered after 42 s" && lines.entries[3]["level"] as? String == "info")
        // A new failure after recovery is news again.
        failures.failed("outbox: a claim failed; retrying")
        #expect(lines.entries.count == 5 && lines.entries[4]["msg"] as? String == "outbox: a claim failed; retrying")
    }

    @Test func numbersInFieldsAreJSONNumbersAndIDsAndCodesStayText() {
        for number in ["0", "8080", "-3", "0.25", "123456789012345"] { #expect(Log.isNumber(number), "\(number)") }
        for text in ["", "-", "007", "1.", ".5", "1e5", "1234567890123456", "12a", "+1", "0x10", "1.2.3", " 1"] { #expect(!Log.isNumber(text), "\(text)") }
    }
}
