import Synchronization

/// Rung after a change on this node committed an alert's deliveries, so the delivery engine
/// looks for them at once instead of at its next poll (up to 200 ms later): a raised alert's
/// first pushes leave as soon as its transaction is in. Another node's alerts are found by the
/// poll. Ringing is an atomic increment; a worker waiting notices it within 5 ms.
public final class DeliveryBell: Sendable {
    /// The one bell of this process: features ring it, the outbox worker waits on it.
    public static let shared = DeliveryBell()

    private let rings = Atomic<Int>(0)

    public init() {}

    public func ring() {
        rings.add(1, ordering: .releasing)
    }

    /// Waits until the bell rings or `timeout` passes (whichever first); true when it rang.
    public func wait(upTo timeout: Duration) async -> Bool {
        let seen = rings.load(ordering: .acquiring)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if rings.load(ordering: .acquiring) != seen { return true }
            // Throws only when the waiting task is cancelled (the worker stopping).
            do { try await Task.sleep(for: min(.milliseconds(5), ContinuousClock.now.duration(to: deadline))) } catch { return false }
        }
        return rings.load(ordering: .acquiring) != seen
    }
}
