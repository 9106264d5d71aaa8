import Dispatch
import RoostProtocol
import Synchronization

/// Runs password hashing (deliberately slow, CPU-bound) on at most `width` threads of its own,
/// with a bounded line of waiters: a login flood gets 503s instead of starving other requests.
///
/// Fair per client address: waiters are served round-robin by address, so one address flooding
/// the gate waits behind its own requests, not in front of everyone else's; and when the line
/// is full, the 503 goes to the address with the most requests waiting (its newest one), not
/// to a newcomer from another address.
final class HashingGate: Sendable {
    private typealias Waiter = CheckedContinuation<Void, any Error>

    private struct State {
        var running = 0
        var waiting = 0
        /// Each address's waiters, oldest first, and the addresses in round-robin order.
        var lines: [String: [Waiter]] = [:]
        var order: [String] = []
    }

    let width: Int
    let maxWaiting: Int
    private let state = Mutex(State())

    init(width: Int, maxWaiting: Int = 64) {
        self.width = max(1, width)
        self.maxWaiting = maxWaiting
    }

    /// Requests waiting for a hashing thread now.
    var waitingCount: Int { state.withLock { $0.waiting } }

    static let busy = APIError(.serviceUnavailable, code: .unavailable, message: "too many sign-ins at once; try again shortly",
                               headers: ["Retry-After": "1"])

    /// Runs `work` on a hashing thread; throws 503 `unavailable` when the line is full and
    /// `address` has at least as many requests waiting as any other.
    func run<Value: Sendable>(address: String = "", _ work: @escaping @Sendable () -> Value) async throws -> Value {
        try await enter(address)
        defer { leave() }
        return await withCheckedContinuation { continuation in
            // A serial queue of its own runs on an overcommit thread, off the cooperative pool.
            DispatchQueue(label: "roost.hashing").async { continuation.resume(returning: work()) }
        }
    }

    private func enter(_ address: String) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            var refused: CheckedContinuation<Void, any Error>?
            state.withLock { state in
                if state.running < width {
                    state.running += 1
                    continuation.resume()
                    return
                }
                if state.waiting >= maxWaiting {
                    // The line is full: the address with the longest line gives up its newest waiter,
                    // unless that is this address (then this request is the one refused).
                    let (fullest, count) = state.lines.max { $0.value.count < $1.value.count }.map { ($0.key, $0.value.count) } ?? (address, 0)
                    if fullest == address || count <= state.lines[address, default: []].count + 1 {
                        refused = continuation
                        return
                    }
                    refused = state.lines[fullest]!.removeLast()
                    state.waiting -= 1
                    if state.lines[fullest]!.isEmpty {
                        state.lines.removeValue(forKey: fullest)
                        state.order.removeAll { $0 == fullest }
                    }
                }
                if state.lines[address] == nil { state.order.append(address) }
                state.lines[address, default: []].append(continuation)
                state.waiting += 1
            }
            refused?.resume(throwing: Self.busy)
        }
    }

    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard !state.order.isEmpty else {
                state.running -= 1
                return nil
            }
            // The slot passes straight to the oldest waiter of the next address in turn.
            let address = state.order.removeFirst()
            let waiter = state.lines[address]!.removeFirst()
            state.waiting -= 1
            if state.lines[address]!.isEmpty {
                state.lines.removeValue(forKey: address)
            } else {
                state.order.append(address)
            }
            return waiter
        }
        next?.resume()
    }
}
