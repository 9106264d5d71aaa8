import Dispatch
import Foundation
import RoostPersistence
import Synchronization

/// `/readyz`'s check that PostgreSQL answers and its schema is the one this Roost needs, on a
/// connection of its own: a probe never takes a pooled connection from requests (a load
/// balancer polling a saturated node would otherwise queue behind them and call a busy node
/// dead). One probe runs at a time on its own thread; callers that come meanwhile share its
/// answer, and each waits at most `timeout` (`ROOST_READINESS_TIMEOUT_MS`, a second by default).
/// `warm()` opens the probe's connection at start, so the first probe after a start or a deploy
/// costs a query, not a new backend's start.
final class ReadinessProbe: Sendable {
    private struct State {
        /// Touched only by the probe thread while `inFlight` (hence the box's unchecked sendability).
        var connection: ConnectionBox?
        var waiting: [UInt64: CheckedContinuation<String?, Never>] = [:]
        var nextID: UInt64 = 0
        var inFlight = false
    }

    /// `@unchecked Sendable`: one probe at a time uses it (see `State.inFlight`).
    private final class ConnectionBox: @unchecked Sendable {
        let connection: PostgresConnection
        init(_ connection: PostgresConnection) { self.connection = connection }
    }

    private let configuration: ConnectionConfiguration
    /// The newest migration this Roost needs applied (nil: not checked).
    private let requiredSchema: Int?
    private let state = Mutex(State())
    private let timers = DispatchQueue(label: "roost.readiness.timeouts")
    private let timeoutMilliseconds: Int

    init(configuration: ConnectionConfiguration, requiredSchema: Int? = nil, timeoutMilliseconds: Int = 1000) {
        self.configuration = configuration
        self.requiredSchema = requiredSchema
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// Runs one probe in the background with no one waiting: its connection is then open.
    func warm() {
        let start = state.withLock { state -> Bool in
            defer { state.inFlight = true }
            return !state.inFlight
        }
        if start { Thread.detachNewThread { [self] in probe() } }
    }

    /// Nil when PostgreSQL answered within the timeout with a schema at least `requiredSchema`;
    /// else why this node is not ready, as a sentence.
    func ready() async -> String? {
        await withCheckedContinuation { continuation in
            let (id, start) = state.withLock { state -> (UInt64, Bool) in
                state.nextID += 1
                state.waiting[state.nextID] = continuation
                defer { state.inFlight = true }
                return (state.nextID, !state.inFlight)
            }
            timers.asyncAfter(deadline: .now() + .milliseconds(timeoutMilliseconds)) { [self] in
                let limit = timeoutMilliseconds % 1000 == 0 ? "\(timeoutMilliseconds / 1000) s" : "\(timeoutMilliseconds) ms"
                state.withLock { $0.waiting.removeValue(forKey: id) }?.resume(returning: "PostgreSQL did not answer within \(limit)")
            }
            if start { Thread.detachNewThread { [self] in probe() } }
        }
    }

    /// Runs on a thread of its own (libpq blocks), then answers everyone waiting.
    private func probe() {
        let box = state.withLock { $0.connection }
        var answer: String? = "PostgreSQL cannot be reached"
        var kept: ConnectionBox?
        do {
            let current = try box ?? ConnectionBox(PostgresConnection.connect(configuration))
            if let requiredSchema {
                let have = try Migrator.schemaVersion(on: current.connection)
                answer = have >= requiredSchema ? nil
                    : "the database schema is at migration \(have) and this Roost needs \(requiredSchema): run roost migrate"
            } else {
                try current.connection.run(script: "SELECT 1")
                answer = nil
            }
            kept = current
        } catch {
            kept = nil  // opened afresh next time
        }
        let waiters = state.withLock { state -> [CheckedContinuation<String?, Never>] in
            state.connection = kept
            state.inFlight = false
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for waiter in waiters { waiter.resume(returning: answer) }
    }
}
