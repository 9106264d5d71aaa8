import Dispatch
import Foundation
import Synchronization

/// Waits for SIGINT or SIGTERM, delivered through dispatch sources rather than a C handler.
public enum ShutdownSignal {
    /// Returns the signal number that arrived first.
    public static func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            let watch = SignalWatch(signals: [SIGINT, SIGTERM]) { continuation.resume(returning: $0) }
            retained.withLock { $0 = watch }
        }
    }

    /// Keeps the current watch (and its dispatch sources) alive.
    private static let retained = Mutex<SignalWatch?>(nil)
}

/// Dispatch signal sources that report the first of several signals once.
///
/// `@unchecked Sendable`: `sources` is written only in `init`, before any handler can run,
/// and `fired` is a Mutex.
private final class SignalWatch: @unchecked Sendable {
    private var sources: [DispatchSourceSignal] = []
    private let fired = FiredOnce()

    init(signals: [Int32], onFirst: @escaping @Sendable (Int32) -> Void) {
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [fired] in
                if fired.claim() { onFirst(number) }
            }
            source.resume()
            sources.append(source)
        }
    }
}

/// True for the first caller of `claim()` only, from any thread.
private final class FiredOnce: Sendable {
    private let state = Mutex(false)
    func claim() -> Bool {
        state.withLock { fired in
            defer { fired = true }
            return !fired
        }
    }
}
