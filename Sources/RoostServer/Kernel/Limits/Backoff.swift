import Foundation

/// How long to wait before trying again: `base` seconds after the first failure, doubling with
/// each one after, never more than `cap`; with `jitter`, a random share of that (so a crowd of
/// retries spreads out). The one backoff of the server's jobs, deliveries and listeners.
struct Backoff: Sendable, Equatable {
    let base: Double
    let cap: Double
    /// The share of the delay actually waited, drawn anew each time (nil: all of it).
    var jitter: ClosedRange<Double>?

    init(base: Double, cap: Double, jitter: ClosedRange<Double>? = nil) {
        self.base = base
        self.cap = cap
        self.jitter = jitter
    }

    /// The wait after `failures` failures in a row (1 for the first).
    func seconds(afterFailures failures: Int) -> Double {
        let full = min(cap, base * pow(2, Double(max(0, failures - 1))))
        return jitter.map { full * Double.random(in: $0) } ?? full
    }
}
