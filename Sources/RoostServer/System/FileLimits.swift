#if canImport(Glibc)
import Glibc
#endif

enum FileLimits {
    /// Raises the soft RLIMIT_NOFILE to the hard limit: every connection is a descriptor.
    static func raiseOpenFileLimit(log: Log) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        guard limit.rlim_cur < limit.rlim_max else { return }
        let before = limit.rlim_cur
        limit.rlim_cur = limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            log.debug("raised the open-file limit", ["from": String(before), "to": String(limit.rlim_max)])
        }
    }
}
