import Synchronization

/// A token bucket per key, in memory on this node: `perMinute` tokens a minute come back, up to
/// `burst`. What costs a token is the caller's: `take` spends one only when there is one (posts
/// per account), `charge` spends one whatever is left (refusals per address: a burst at once is
/// paid for in full), and `allows` only looks. Holds at most `capacity` keys: past it, the full
/// buckets are forgotten (a full bucket is no loss), and if that frees nothing, all of them.
final class TokenBuckets<Key: Hashable & Sendable>: Sendable {
    private struct Bucket {
        var tokens: Double
        var at: Double
    }

    let perMinute: Int
    let burst: Int
    private let capacity: Int
    /// Seconds on a monotonic clock (a test's stands still until it is moved).
    private let now: @Sendable () -> Double
    private let buckets = Mutex<[Key: Bucket]>([:])

    init(perMinute: Int, burst: Int, capacity: Int = 50_000, now: @escaping @Sendable () -> Double) {
        (self.perMinute, self.burst, self.capacity, self.now) = (perMinute, burst, capacity, now)
    }

    /// Takes a token from `key`'s bucket: nil when there was one, else the seconds until there is.
    func take(_ key: Key) -> Int? {
        let time = now()
        return buckets.withLock { buckets in
            var bucket = refilled(buckets[key], time, &buckets)
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
            }
            bucket.tokens -= 1
            buckets[key] = bucket
            return nil
        }
    }

    /// Whether `key`'s bucket has a token.
    func allows(_ key: Key) -> Bool {
        let time = now()
        return buckets.withLock { buckets in
            guard let bucket = buckets[key] else { return true }
            return min(Double(burst), bucket.tokens + (time - bucket.at) * rate) >= 1
        }
    }

    /// Takes a token from `key`'s bucket, below empty if need be.
    func charge(_ key: Key) {
        let time = now()
        buckets.withLock { buckets in
            var bucket = refilled(buckets[key], time, &buckets)
            bucket.tokens -= 1
            buckets[key] = bucket
        }
    }

    private var rate: Double { Double(perMinute) / 60 }

    /// The bucket as it is at `time` (a new one full), making room for a new key first.
    private func refilled(_ bucket: Bucket?, _ time: Double, _ buckets: inout [Key: Bucket]) -> Bucket {
        guard let bucket else {
            if buckets.count >= capacity {
                buckets = buckets.filter { $0.value.tokens + (time - $0.value.at) * rate < Double(burst) }
                if buckets.count >= capacity { buckets.removeAll(keepingCapacity: true) }
            }
            return Bucket(tokens: Double(burst), at: time)
        }
        return Bucket(tokens: min(Double(burst), bucket.tokens + (time - bucket.at) * rate), at: time)
    }
}
