import Foundation

/// How fast one account may post on this node (docs/SECURITY.md, "Limits"): a token bucket of
/// `perMinute` posts, refilled at that rate, held in memory so a post costs PostgreSQL nothing
/// more. A neighbour typing never meets it; a script flooding a group's streams and devices does
/// (429 with `Retry-After`). Alerts also have their own hourly limit.
typealias PostPace = TokenBuckets<UUID>

extension TokenBuckets where Key == UUID {
    convenience init(perMinute: Int, now: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        self.init(perMinute: perMinute, burst: perMinute, now: now)
    }
}
