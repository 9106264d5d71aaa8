import Foundation
import Synchronization

/// A failure that repeats, said as people want to read it: a warning when it starts, then at most
/// one "still failing (N times in M s)" every `interval`, and "recovered after M s" when the same
/// work next succeeds; not a line per try. A PostgreSQL outage of 12 s made every background loop
/// log each of its retries (226 lines); each loop now says three things at most.
public final class FailureLog: Sendable {
    private struct Streak {
        let since: Double
        var count: Int
        var lastSaid: Double
    }

    private let log: Log
    private let interval: Double
    private let now: @Sendable () -> Double
    private let streaks = Mutex<[String: Streak]>([:])

    /// `now`: a monotonic clock in seconds (a test's own).
    public init(log: Log, interval: Double = 30, now: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        self.log = log
        self.interval = interval
        self.now = now
    }

    /// The work `message` names failed (again).
    public func failed(_ message: String, _ fields: [String: String] = [:]) {
        let time = now()
        let say: (count: Int, seconds: Double)? = streaks.withLock { table in
            guard var streak = table[message] else {
                table[message] = Streak(since: time, count: 1, lastSaid: time)
                return (1, 0)
            }
            streak.count += 1
            defer { table[message] = streak }
            guard time - streak.lastSaid >= interval else { return nil }
            streak.lastSaid = time
            return (streak.count, time - streak.since)
        }
        guard let say else { return }
        if say.count == 1 {
            log.warning(message, fields)
        } else {
            log.warning("\(message) (still failing: \(say.count) times in \(Int(say.seconds)) s)",
                        fields.merging(["failures": String(say.count), "failing_s": String(Int(say.seconds))]) { $1 })
        }
    }

    /// The work `message` names succeeded: a streak of failures, if any, is over.
    public func succeeded(_ message: String) {
        let time = now()
        guard let streak = streaks.withLock({ $0.removeValue(forKey: message) }) else { return }
        log.info("\(message): recovered after \(Int((time - streak.since).rounded())) s",
                 ["failures": String(streak.count), "failing_s": String(Int((time - streak.since).rounded()))])
    }
}
