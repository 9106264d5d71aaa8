import Foundation
import Synchronization

/// How fast one account may post on this node (docs/SECURITY.md, "Limits"): a token bucket of
/// `perMinute` posts, refilled at that rate, held in memory so a post costs PostgreSQL nothing
/// more. A neighbour typing never meets it; a script flooding a group's streams and devices does
/// (429 with `Retry-After`). Alerts also have their own hourly limit.
final class PostPace: Sendable {
    let perMinute: Int
    private let now: @Sendable () -> Double
    private let buckets = Mutex<[UUID: (tokens: Double, at: Double)]>([:])

    init(perMinute: Int, now: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        self.perMinute = perMinute
        self.now = now
    }

    /// Takes one post for `account`: nil when it may post, else the seconds until it may.
    func take(_ account: UUID) -> Int? {
        let time = now()
        let rate = Double(perMinute) / 60
        return buckets.withLock { buckets in
            // Full buckets say nothing a fresh one would not: forget them when many are kept.
            if buckets.count > 50_000 {
                buckets = buckets.filter { $0.value.tokens + (time - $0.value.at) * rate < Double(perMinute) }
            }
            var bucket = buckets[account] ?? (Double(perMinute), time)
            bucket.tokens = min(Double(perMinute), bucket.tokens + (time - bucket.at) * rate)
            bucket.at = time
            guard bucket.tokens >= 1 else {
                buckets[account] = bucket
                return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
            }
            bucket.tokens -= 1
            buckets[account] = bucket
            return nil
        }
    }
}
