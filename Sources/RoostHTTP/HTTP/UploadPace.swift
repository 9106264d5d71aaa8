/// Whether a streamed request body arrives fast enough (docs/SECURITY.md, "Upload slots"): at a
/// tick, the bytes of the last full window must average at least the minimum rate, or the upload
/// is cut (408). Time the server spent behind (the connection paused, not reading) does not
/// count against the client: `restart` begins a fresh window. Pure: times are the loop clock's
/// nanoseconds, so a test moves time instead of waiting for it.
struct UploadPace {
    let minimumBytesPerSecond: Int
    let window: UInt64
    /// Cumulative bytes at past ticks, oldest first; the first is at least a window old once
    /// a whole window has been seen.
    private var samples: [(at: UInt64, bytes: Int)]
    private(set) var received = 0

    init(minimumBytesPerSecond: Int, windowNanoseconds: UInt64, now: UInt64) {
        self.minimumBytesPerSecond = minimumBytesPerSecond
        window = windowNanoseconds
        samples = [(now, 0)]
    }

    mutating func receive(_ count: Int) { received += count }

    /// The server fell behind and resumed reading now: judge only from here.
    mutating func restart(now: UInt64) { samples = [(now, received)] }

    /// A tick at `now`: true when the last whole window brought too little.
    mutating func isTooSlow(now: UInt64) -> Bool {
        samples.append((now, received))
        // The newest sample at least a window old is the base; older ones are no longer needed.
        guard let base = samples.lastIndex(where: { now >= $0.at && now - $0.at >= window }) else { return false }
        samples.removeFirst(base)
        let (start, bytes) = samples[0]
        let elapsed = now - start
        guard minimumBytesPerSecond > 0, elapsed > 0 else { return false }
        // bytes / seconds < minimum, in integers: bytes * 1e9 < minimum * nanoseconds.
        return (received - bytes).multipliedFullWidth(by: 1_000_000_000) < minimumBytesPerSecond.multipliedFullWidth(by: Int(elapsed))
    }
}
