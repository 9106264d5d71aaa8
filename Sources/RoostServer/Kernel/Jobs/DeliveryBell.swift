import Foundation
import Synchronization

/// Rung after a change on this node committed an alert's deliveries, so the delivery engine
/// looks for them at once instead of at its next poll (up to 200 ms later): a raised alert's
/// first pushes leave as soon as its transaction is in. Another node's alerts are found by the
/// poll. A waiter sleeps until a ring or its timeout, whichever comes first: nothing spins.
public final class DeliveryBell: Sendable {
    /// The one bell of this process: features ring it, the outbox worker waits on it.
    public static let shared = DeliveryBell()

    private struct State {
        var rings = 0
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// How many wait for a ring now (the tests ring once a waiter is parked).
    var waiting: Int { state.withLock { $0.waiters.count } }

    public func ring() {
        let waiters = state.withLock { state in
            state.rings += 1
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters.values { waiter.resume() }
    }

    /// Waits until the bell rings or `timeout` passes, whichever first; true when it rang. A
    /// ring before the wait began is not heard.
    public func wait(upTo timeout: Duration) async -> Bool {
        let seen = state.withLock { $0.rings }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            group.addTask {
                await self.ring(after: seen)
                return !Task.isCancelled
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Returns at the first ring after `seen`, or when the task is cancelled.
    private func ring(after seen: Int) async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    // Rung meanwhile, or cancelled before the handler could find this waiter.
                    if state.rings != seen || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
