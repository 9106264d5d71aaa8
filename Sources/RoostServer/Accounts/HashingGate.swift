import Dispatch
import RoostProtocol
import Synchronization

/// Runs password hashing (deliberately slow, CPU-bound) on at most `width` threads of its own,
/// with a bounded line of waiters: a login flood gets 503s instead of starving other requests.
final class HashingGate: Sendable {
    private struct State {
        var running = 0
        var waiting: [CheckedContinuation<Void, any Error>] = []
    }

    let width: Int
    let maxWaiting: Int
    private let state = Mutex(State())

    init(width: Int, maxWaiting: Int = 64) {
        self.width = max(1, width)
        self.maxWaiting = maxWaiting
    }

    /// Runs `work` on a hashing thread; throws 503 `unavailable` when the line is full.
    func run<Value: Sendable>(_ work: @escaping @Sendable () -> Value) async throws -> Value {
        try await enter()
        defer { leave() }
        return await withCheckedContinuation { continuation in
            // A serial queue of its own runs on an overcommit thread, off the cooperative pool.
            DispatchQueue(label: "roost.hashing").async { continuation.resume(returning: work()) }
        }
    }

    private func enter() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let decision = state.withLock { state -> Bool? in
                if state.running < width {
                    state.running += 1
                    return true
                }
                guard state.waiting.count < maxWaiting else { return false }
                state.waiting.append(continuation)
                return nil
            }
            switch decision {
            case true?: continuation.resume()
            case false?: continuation.resume(throwing: APIError(
                .serviceUnavailable, code: "unavailable", message: "too many sign-ins at once; try again shortly",
                headers: ["Retry-After": "1"]))
            case nil: break
            }
        }
    }

    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            if state.waiting.isEmpty {
                state.running -= 1
                return nil
            }
            return state.waiting.removeFirst()  // the slot passes straight to the next waiter
        }
        next?.resume()
    }
}
