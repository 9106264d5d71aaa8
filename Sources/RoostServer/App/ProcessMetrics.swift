import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The process's own figures in Prometheus' standard names, read from /proc at each scrape:
/// resident memory, CPU time, open descriptors and their limit, and when it started.
enum ProcessMetrics {
    static func render() -> String {
        var out = ""
        func gauge(_ name: String, _ type: String, _ help: String, _ value: Double?) {
            guard let value else { return }
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value == value.rounded() ? String(Int64(value)) : String(value))\n"
        }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let page = Double(sysconf(Int32(_SC_PAGESIZE)))
        // /proc/self/stat: the fields after the command's closing parenthesis, from the state (3rd) on.
        var stat: [String] = []
        if let text = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8), let end = text.range(of: ")", options: .backwards) {
            stat = text[end.upperBound...].split(separator: " ").map(String.init)
        }
        func field(_ number: Int) -> Double? { stat.count > number - 3 ? Double(stat[number - 3]) : nil }
        let cpu = field(14).flatMap { user in field(15).map { (user + $0) / ticks } }
        gauge("process_cpu_seconds_total", "counter", "User and system CPU time spent, seconds.", cpu)
        gauge("process_resident_memory_bytes", "gauge", "Resident memory, bytes.", field(24).map { $0 * page })
        gauge("process_virtual_memory_bytes", "gauge", "Virtual memory, bytes.", field(23))
        if let boot = bootTime(), let started = field(22) {
            gauge("process_start_time_seconds", "gauge", "When the process started, seconds since the epoch.", boot + started / ticks)
        }
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")).map { Double($0.count) }
        gauge("process_open_fds", "gauge", "Open file descriptors (sockets included).", descriptors)
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            gauge("process_max_fds", "gauge", "The open-file limit.", Double(limit.rlim_cur))
        }
        return out
    }

    /// The machine's boot time (`btime` of /proc/stat), seconds since the epoch.
    private static func bootTime() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix("btime ") }.flatMap { Double($0.dropFirst(6)) }
    }
}
