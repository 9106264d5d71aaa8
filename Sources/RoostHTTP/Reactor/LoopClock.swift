import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where event loops read the time, in monotonic nanoseconds: every deadline, timer and duration
/// of the transport goes through one. `SystemClock` in service; a `ManualClock` in tests of
/// deadlines, which move time on instead of waiting for it.
public protocol LoopClock: Sendable {
    func now() -> UInt64
    /// Whether time passes by itself. A loop on such a clock sleeps in `epoll_wait` until its next
    /// deadline; on one that does not, it sleeps until woken (a manual clock wakes its loops).
    var passesByItself: Bool { get }
    /// Called once by each loop that reads this clock, with a way to wake it.
    func attach(wake: @escaping @Sendable () -> Void)
}

/// `CLOCK_MONOTONIC`.
public struct SystemClock: LoopClock {
    public init() {}

    public func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    public var passesByItself: Bool { true }
    public func attach(wake: @escaping @Sendable () -> Void) {}
}

/// A clock that stands still until `advance` moves it; the loops reading it then wake and run
/// the timers that came due (a deadline test moves time past a timeout instead of sleeping).
public final class ManualClock: LoopClock {
    private let state = Mutex<(now: UInt64, wakers: [@Sendable () -> Void])>((1_000_000_000, []))

    public init() {}

    public func now() -> UInt64 { state.withLock { $0.now } }
    public var passesByItself: Bool { false }

    public func attach(wake: @escaping @Sendable () -> Void) {
        state.withLock { $0.wakers.append(wake) }
    }

    /// Moves time on and wakes every loop reading this clock.
    public func advance(milliseconds: Int) {
        let wakers = state.withLock { state in
            state.now += UInt64(milliseconds) * 1_000_000
            return state.wakers
        }
        for wake in wakers { wake() }
    }
}
