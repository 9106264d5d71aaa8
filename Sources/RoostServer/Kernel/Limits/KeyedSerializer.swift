import RoostProtocol
import Synchronization

/// Runs work for the same throttle key one request at a time on this node, in arrival order,
/// with the waiters parked in memory: a flood of requests on one key (one address guessing
/// passwords) never holds more than one database connection of this node, and never delays
/// requests on other keys. Beyond `maxWaiting` waiters on a key, the newcomer gets 429 at once.
/// Across nodes the database's advisory lock on the same key does the rest.
final class KeyedSerializer: Sendable {
    private let held = Mutex<[String: [CheckedContinuation<Void, Never>]]>([:])
    let maxWaiting: Int

    init(maxWaiting: Int = 32) {
        self.maxWaiting = maxWaiting
    }

    static let flooded = APIError(.tooManyRequests, code: .rateLimited, message: "too many requests like this at once; try again shortly",
                                  headers: ["Retry-After": "1"])

    /// Runs `work` holding every key of what it counts.
    func run<Value>(_ keys: [RateLimitKey], _ work: () async throws -> Value) async throws -> Value {
        try await run(keys.map(\.description), work)
    }

    func run<Value>(_ keys: [String], _ work: () async throws -> Value) async throws -> Value {
        let ordered = Array(Set(keys)).sorted()  // one order for everyone: no deadlock
        var taken: [String] = []
        defer { for key in taken.reversed() { release(key) } }
        for key in ordered {
            try await acquire(key)
            taken.append(key)
        }
        return try await work()
    }

    private func acquire(_ key: String) async throws {
        enum Decision { case go, wait, refuse }
        var decision = Decision.go
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            decision = held.withLock { held in
                guard var waiters = held[key] else {
                    held[key] = []
                    return .go
                }
                guard waiters.count < maxWaiting else { return .refuse }
                waiters.append(continuation)
                held[key] = waiters
                return .wait
            }
            if decision != .wait { continuation.resume() }
        }
        if decision == .refuse { throw Self.flooded }
    }

    private func release(_ key: String) {
        let next = held.withLock { held -> CheckedContinuation<Void, Never>? in
            guard var waiters = held[key], !waiters.isEmpty else {
                held.removeValue(forKey: key)
                return nil
            }
            let next = waiters.removeFirst()  // the key passes straight to the next in line
            held[key] = waiters
            return next
        }
        next?.resume()
    }
}
