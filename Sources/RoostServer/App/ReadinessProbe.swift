import Dispatch
import Foundation
import RoostPersistence
import Synchronization

/// `/readyz`'s check that PostgreSQL answers, on a connection of its own: a probe never takes a
/// pooled connection from requests (a load balancer polling a saturated node would otherwise
/// queue behind them and call a busy node dead). One probe runs at a time on its own thread;
/// callers that come meanwhile share its answer, and each waits at most a second.
final class ReadinessProbe: Sendable {
    private struct State {
        /// Touched only by the probe thread while `inFlight` (hence the box's unchecked sendability).
        var connection: ConnectionBox?
        var waiting: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var nextID: UInt64 = 0
        var inFlight = false
    }

    /// `@unchecked Sendable`: one probe at a time uses it (see `State.inFlight`).
    private final class ConnectionBox: @unchecked Sendable {
        let connection: PostgresConnection
        init(_ connection: PostgresConnection) { self.connection = connection }
    }

    private let configuration: ConnectionConfiguration
    private let state = Mutex(State())
    private let timers = DispatchQueue(label: "roost.readiness.timeouts")

    init(configuration: ConnectionConfiguration) {
        self.configuration = configuration
    }

    /// True when PostgreSQL answered `SELECT 1` within a second.
    func ready() async -> Bool {
        await withCheckedContinuation { continuation in
            let (id, start) = state.withLock { state -> (UInt64, Bool) in
                state.nextID += 1
                state.waiting[state.nextID] = continuation
                defer { state.inFlight = true }
                return (state.nextID, !state.inFlight)
            }
            timers.asyncAfter(deadline: .now() + 1) { [self] in
                state.withLock { $0.waiting.removeValue(forKey: id) }?.resume(returning: false)
            }
            if start { Thread.detachNewThread { [self] in probe() } }
        }
    }

    /// Runs on a thread of its own (libpq blocks), then answers everyone waiting.
    private func probe() {
        let box = state.withLock { $0.connection }
        var answer = false
        var kept: ConnectionBox?
        do {
            let current = try box ?? ConnectionBox(PostgresConnection.connect(configuration))
            try current.connection.run(script: "SELECT 1")
            answer = true
            kept = current
        } catch {
            kept = nil  // opened afresh next time
        }
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.connection = kept
            state.inFlight = false
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for waiter in waiters { waiter.resume(returning: answer) }
    }
}
