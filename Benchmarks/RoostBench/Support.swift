import CLinuxEvents
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// This process's CPU time so far (user and system, all threads), in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// Monotonic nanoseconds.
func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

func milliseconds(_ nanoseconds: UInt64) -> String { String(format: "%.2f ms", Double(nanoseconds) / 1e6) }

/// The value at fraction `q` of sorted samples (nearest rank).
func percentile(_ sorted: [UInt64], _ q: Double) -> UInt64 {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * q).rounded(.up)) - 1))]
}

/// The fields of /proc/PID/stat after the command, so `[0]` is the state (field 3, 1-based),
/// `[1]` the parent, `[11]` and `[12]` utime and stime, `[13]` and `[14]` the reaped children's.
private func procStat(_ pid: String) -> [Substring]? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = text.lastIndex(of: ")") else { return nil }
    return text[text.index(after: close)...].split(separator: " ")
}

private let clockTicks = Double(sysconf(Int32(_SC_CLK_TCK)))

/// CPU seconds (user + system) a process has used, from /proc/PID/stat.
func cpuSeconds(pid: Int32) -> Double {
    guard let fields = procStat(String(pid)), fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / clockTicks
}

/// CPU seconds PostgreSQL has used: the postmaster with the children it has reaped (backends
/// that ended), plus every child still running, from /proc. The difference over a step is the
/// database's share of it, backends that came and went included.
func databaseCPUSeconds(postmaster: Int32) -> Double {
    guard let own = procStat(String(postmaster)), own.count > 14 else { return 0 }
    var total = own[11...14].compactMap { Double($0) }.reduce(0, +)
    let parent = String(postmaster)
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where entry.first?.isNumber == true {
        guard let child = procStat(entry), child.count > 12, child[1] == parent,
              let user = Double(child[11]), let system = Double(child[12]) else { continue }
        total += user + system
    }
    return total / clockTicks
}

/// Samples a process's resident memory every 10 ms from `init` until `stop`: the baseline, and
/// the peak seen in between (kB).
final class PeakRSS: @unchecked Sendable {
    // Unchecked: the counters are atomics; `thread` is touched only by `init` and `stop`.
    let baseline: Int
    private let peakSeen: Atomic<Int>
    private let sampling = Atomic<Bool>(true)
    private var thread: Thread?

    init(pid: Int32) {
        baseline = statusKilobytes(pid: pid, "VmRSS")
        peakSeen = Atomic(baseline)
        let thread = Thread { [self] in
            while sampling.load(ordering: .relaxed) {
                let rss = statusKilobytes(pid: pid, "VmRSS")
                if rss > peakSeen.load(ordering: .relaxed) { peakSeen.store(rss, ordering: .relaxed) }
                usleep(10_000)
            }
        }
        self.thread = thread
        thread.start()
    }

    /// Stops sampling; the peak.
    @discardableResult
    func stop() -> Int {
        sampling.store(false, ordering: .relaxed)
        usleep(20_000)
        return peakSeen.load(ordering: .relaxed)
    }

    var peak: Int { peakSeen.load(ordering: .relaxed) }
}

/// A TCP connection to 127.0.0.1:`port` (Nagle off).
func connectLoopback(port: UInt16) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var one: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard result == 0 else {
        Glibc.close(fd)
        throw BenchError("cannot connect to 127.0.0.1:\(port)")
    }
    return fd
}

/// Writes all of `bytes` to a blocking socket; false once the peer has gone.
func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent > 0 else { return false }
        offset += sent
    }
    return true
}

/// Where `needle` first starts in `bytes` at or after `from`. A plain loop: the client's loop
/// runs it on every XMPP read, where the standard library's `firstRange(of:)` made roost-bench
/// use about three times the CPU (ejabberd fanout at 400 posts/s: 0.67 s against 0.25 s).
func firstIndex(of needle: [UInt8], in bytes: [UInt8], from: Int = 0) -> Int? {
    guard from >= 0, bytes.count - from >= needle.count, let first = needle.first else { return nil }
    var index = from
    let last = bytes.count - needle.count
    while index <= last {
        if bytes[index] == first {
            var offset = 1
            while offset < needle.count && bytes[index + offset] == needle[offset] { offset += 1 }
            if offset == needle.count { return index }
        }
        index += 1
    }
    return nil
}

/// A line of `/proc/PID/status` in kB, e.g. `VmRSS`.
func statusKilobytes(pid: Int32, _ field: String) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0") ?? 0
    }
    return 0
}

func raiseDescriptorLimit() {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A blocking HTTP/1.1 keep-alive client for posting (one per poster thread).
final class HTTPPoster {
    private var fd: Int32 = -1
    private let port: UInt16
    private var reader = HTTPResponseReader()

    init(port: UInt16) throws {
        self.port = port
        try connect()
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    private func connect() throws {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        fd = try connectLoopback(port: port)
        reader = HTTPResponseReader()
    }

    /// Sends one request and returns the status and body.
    func request(_ method: String, _ path: String, body: String, token: String) throws -> (Int, String) {
        let bytes = Array(body.utf8)
        let head = "\(method) \(path) HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer \(token)\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(bytes.count)\r\n\r\n"
        guard sendAll(fd, Array(head.utf8) + bytes) else { throw BenchError("send failed") }
        let (status, answer) = try reader.receive(from: fd)
        return (status, String(decoding: answer, as: UTF8.self))
    }
}

/// HTTP/1.1 responses out of a byte stream, framed by Content-Length or chunked (Synapse's
/// JSON comes chunked). Trailers are not expected; a response without either framing is taken
/// to have no body.
struct HTTPResponseReader {
    private var buffer: [UInt8] = []
    private static let crlf = Array("\r\n".utf8), headEnd = Array("\r\n\r\n".utf8)

    mutating func feed<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 { buffer += bytes }

    /// The next whole response's status and body, or nil until more bytes arrive.
    mutating func next() -> (status: Int, body: [UInt8])? {
        guard let end = firstIndex(of: Self.headEnd, in: buffer) else { return nil }
        let lines = String(decoding: buffer[0..<end], as: UTF8.self).lowercased().split(separator: "\r\n")
        let status = lines.first.flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? 0
        func header(_ name: String) -> String? {
            lines.dropFirst().first { $0.hasPrefix(name + ":") }.map { $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces) }
        }
        var position = end + Self.headEnd.count
        var body: [UInt8] = []
        if header("transfer-encoding") == "chunked" {
            while true {
                guard let lineEnd = firstIndex(of: Self.crlf, in: buffer, from: position) else { return nil }
                let sizeLine = String(decoding: buffer[position..<lineEnd], as: UTF8.self).prefix { $0 != ";" }
                let size = Int(sizeLine.trimmingCharacters(in: .whitespaces), radix: 16) ?? 0
                position = lineEnd + Self.crlf.count
                guard buffer.count >= position + size + Self.crlf.count else { return nil }
                if size == 0 { break }
                body += buffer[position..<(position + size)]
                position += size + Self.crlf.count
            }
            position += Self.crlf.count
        } else {
            let length = header("content-length").flatMap { Int($0) } ?? 0
            guard buffer.count >= position + length else { return nil }
            body = Array(buffer[position..<(position + length)])
            position += length
        }
        buffer.removeFirst(position)
        return (status, body)
    }

    /// Reads a blocking socket until the next whole response is here.
    mutating func receive(from fd: Int32) throws -> (status: Int, body: [UInt8]) {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            if let response = next() { return response }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw BenchError("connection closed") }
            feed(chunk[0..<count])
        }
    }
}

/// Runs `body(ticket)` for tickets 0..<count on `threads` threads, each ticket no earlier than
/// `began + ticket / rate` (as fast as the threads go without a rate); no ticket starts after
/// `deadline`. Each thread gets its own `State` from `make` (a connection, say).
func paced<State>(count: Int = .max, rate: Int?, threads: Int, until deadline: UInt64? = nil,
                  make: @escaping @Sendable () -> State?, _ body: @escaping @Sendable (inout State, Int) -> Void) {
    let next = Atomic<Int>(0)
    let began = now()
    let group = DispatchGroup()
    for _ in 0..<threads {
        group.enter()
        Thread {
            defer { group.leave() }
            guard var state = make() else { return }
            while true {
                let ticket = next.add(1, ordering: .relaxed).oldValue
                guard ticket < count else { return }
                // A paced run ends at the deadline too: a server slower than the rate is not
                // waited for until it has taken every ticket.
                if let deadline, now() >= deadline { return }
                if let rate {
                    let wait = Int64(began + UInt64(Double(ticket) / Double(rate) * 1e9)) - Int64(now())
                    if wait > 0 { usleep(UInt32(wait / 1000)) }
                }
                body(&state, ticket)
            }
        }.start()
    }
    group.wait()
}

/// Figures for BENCHMARKS.md: each scenario appends one JSON object a line to `--results`, and
/// latency samples (ms, sorted) go to `--latencies` for the CDF plot.
enum Report {
    nonisolated(unsafe) static var resultsPath: String?
    nonisolated(unsafe) static var latenciesPath: String?

    static func record(_ fields: [String: Any]) {
        guard let resultsPath, let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return }
        append(data + Data("\n".utf8), to: resultsPath)
    }

    /// Writes each step's CDF as a gnuplot data block (`# rate R`, then at most 2,000 evenly
    /// spaced quantiles of its sorted samples, ms and fraction; blocks apart by two blank lines).
    static func latencies(_ steps: [(rate: Int, sorted: [UInt64])]) {
        guard let latenciesPath else { return }
        let blocks = steps.filter { !$0.sorted.isEmpty }.map { step -> String in
            let points = min(2_000, step.sorted.count)
            let lines = (0..<points).map { index -> String in
                let sample = step.sorted[min(step.sorted.count - 1, index * step.sorted.count / points)]
                return String(format: "%.3f %.5f", Double(sample) / 1e6, Double(index + 1) / Double(points))
            }
            return "# rate \(step.rate)\n" + lines.joined(separator: "\n") + "\n"
        }
        try? blocks.joined(separator: "\n\n").write(toFile: latenciesPath, atomically: true, encoding: .utf8)
    }

    private static func append(_ data: Data, to path: String) {
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        guard let handle = FileHandle(forWritingAtPath: path) else { return }
        handle.seekToEndOfFile()
        handle.write(data)
        handle.closeFile()
    }
}

func ms(_ nanoseconds: UInt64) -> Double { (Double(nanoseconds) / 1e4).rounded() / 100 }

/// Kernel slab memory (SReclaimable + SUnreclaim) in kB: where socket structures live.
func slabKilobytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8) else { return 0 }
    return text.split(separator: "\n").filter { $0.hasPrefix("Slab:") }
        .compactMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") }.first ?? 0
}

/// Pages of TCP buffer memory in use (`/proc/net/sockstat`, "TCP: ... mem N").
func tcpBufferPages() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/net/sockstat", encoding: .utf8),
          let line = text.split(separator: "\n").first(where: { $0.hasPrefix("TCP:") }) else { return 0 }
    let fields = line.split(separator: " ")
    guard let index = fields.firstIndex(of: "mem"), index + 1 < fields.count else { return 0 }
    return Int(fields[index + 1]) ?? 0
}
