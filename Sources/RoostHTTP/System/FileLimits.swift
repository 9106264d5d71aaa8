import Dispatch

#if canImport(Glibc)
import Glibc
#endif

package enum FileLimits {
    /// Descriptors kept back from client connections besides the pool's: the LISTEN
    /// connection, libdispatch's, webhook clients, standard streams; plus, per event loop,
    /// its epoll and eventfd and its listening sockets.
    static func reserve(threads: Int) -> Int { 64 + 4 * threads }

    /// Raises the soft RLIMIT_NOFILE to the hard limit (every connection is a descriptor) and
    /// returns the limit now in force.
    package static func raiseOpenFileLimit(log: Log) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return Int.max }
        if limit.rlim_cur < limit.rlim_max {
            let before = limit.rlim_cur
            limit.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
                log.debug("raised the open-file limit", ["from": String(before), "to": String(limit.rlim_max)])
            } else {
                limit.rlim_cur = before
            }
        }
        return Int(clamping: limit.rlim_cur)  // RLIM_INFINITY is UInt.max: clamped to Int.max
    }

    /// The connection limit this process can honour: a client over it must get its 503, which
    /// needs a descriptor to accept it with, so the limit stays under the open-file limit less
    /// the pool and the reserve. Says so once when that lowers the configured limit.
    package static func connectionLimit(configured: Int, openFileLimit: Int, poolSize: Int, threads: Int, log: Log) -> Int {
        let budget = max(1, openFileLimit - poolSize - reserve(threads: threads))
        guard configured > budget else { return configured }
        log.warning("the open-file limit caps connections below the configured limit; raise `ulimit -n` to serve more", [
            "configured": String(configured), "open_file_limit": String(openFileLimit), "serving_at_most": String(budget),
        ])
        return budget
    }

    /// libdispatch opens a timer descriptor for each clock the first time a timer on that clock
    /// is armed (`asyncAfter`, `Task.sleep`, the pool's wait deadlines) and traps (SIGILL) if
    /// the process has no descriptor left then: arm one on each clock at start, while they are
    /// free, so running out of descriptors later cannot end the process that way.
    package static func openDispatchTimers() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now()) {
                DispatchQueue.global().asyncAfter(wallDeadline: .now()) { done.resume() }
            }
        }
        try? await Task.sleep(for: .milliseconds(1))  // the continuous clock
        try? await Task.sleep(until: .now + .milliseconds(1), clock: .suspending)
    }
}
