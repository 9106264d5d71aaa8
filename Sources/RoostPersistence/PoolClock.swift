import Dispatch
import Synchronization

/// Where a connection pool reads the time and sets the one timer of its waiting line, in
/// nanoseconds: the system's monotonic clock in service, a `ManualPoolClock` in tests, which
/// move time on instead of waiting for it (a waiter fails exactly when the test says).
public protocol PoolClock: Sendable {
    func now() -> UInt64
    /// A timer that calls `fire` at the last deadline it was set for.
    func makeTimer(_ fire: @escaping @Sendable () -> Void) -> any PoolTimer
}

public protocol PoolTimer: Sendable {
    /// Sets the timer for `deadline`, replacing any earlier setting.
    func schedule(at deadline: UInt64)
    func cancel()
}

/// `DispatchTime` (the uptime clock) and a dispatch timer source.
public struct SystemPoolClock: PoolClock {
    public init() {}

    public func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    public func makeTimer(_ fire: @escaping @Sendable () -> Void) -> any PoolTimer {
        DispatchPoolTimer(fire)
    }

    /// `@unchecked Sendable`: a dispatch source may be scheduled and cancelled from any thread.
    private final class DispatchPoolTimer: PoolTimer, @unchecked Sendable {
        let source = DispatchSource.makeTimerSource(queue: .global())

        init(_ fire: @escaping @Sendable () -> Void) {
            source.setEventHandler(handler: fire)
            source.activate()
        }

        deinit { source.cancel() }

        func schedule(at deadline: UInt64) {
            source.schedule(deadline: DispatchTime(uptimeNanoseconds: deadline), repeating: .never)
        }

        func cancel() { source.cancel() }
    }
}

/// A clock that stands still until `advance` moves it; timers that come due then fire on the
/// caller's thread, before `advance` returns.
public final class ManualPoolClock: PoolClock {
    private let state = Mutex<(now: UInt64, timers: [ManualTimer])>((1_000_000_000, []))

    public init() {}

    public func now() -> UInt64 { state.withLock { $0.now } }

    public func makeTimer(_ fire: @escaping @Sendable () -> Void) -> any PoolTimer {
        let timer = ManualTimer(fire)
        state.withLock { $0.timers.append(timer) }
        return timer
    }

    public func advance(by duration: Duration) {
        let (now, timers) = state.withLock { state in
            state.now += duration.nanoseconds
            return (state.now, state.timers)
        }
        for timer in timers { timer.fireIfDue(now) }
    }

    final class ManualTimer: PoolTimer {
        private let deadline = Mutex<UInt64?>(nil)
        private let fire: @Sendable () -> Void

        init(_ fire: @escaping @Sendable () -> Void) { self.fire = fire }

        func schedule(at deadline: UInt64) { self.deadline.withLock { $0 = deadline } }
        func cancel() { deadline.withLock { $0 = nil } }

        func fireIfDue(_ now: UInt64) {
            let due = deadline.withLock { deadline -> Bool in
                guard let at = deadline, at <= now else { return false }
                deadline = nil
                return true
            }
            if due { fire() }
        }
    }
}

extension Duration {
    /// Whole nanoseconds, for a non-negative duration.
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}
