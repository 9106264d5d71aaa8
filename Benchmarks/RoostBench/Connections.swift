import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `connections`: ramps to N idle connections through worker processes (this machine allows
/// 20,000 descriptors a process), each from its own 127.0.0.x so that every worker has the
/// whole ephemeral port range to itself; the servers (several `roost serve` sharing the port
/// with SO_REUSEPORT when N needs it) are measured from /proc before and after.
func connectionsScenario(_ options: Options) throws {
    let mqtt = options.broker == "mqtt", xmpp = options.broker == "xmpp", matrix = options.broker == "matrix"
    let workers = (options.connections + options.perWorker - 1) / options.perWorker
    let what = mqtt ? "MQTT subscriptions" : xmpp ? "XMPP sessions, each in a room of 100"
        : matrix ? "Matrix /sync long-polls, each member of a room of 100" : "authenticated streams"
    print("connections (\(options.serverName)): \(options.connections) idle \(what) "
          + "from \(workers) client process\(workers == 1 ? "" : "es"), \(options.serverPIDs.count) server process\(options.serverPIDs.count == 1 ? "" : "es")")
    var tokens: [String]?
    if xmpp {
        try Seed.xmppAccounts(databaseURL: options.databaseURL, names: (0..<options.connections).map { "m\($0)" })
    } else if matrix {
        tokens = try matrixMembers(options, count: options.connections, rooms: (options.connections + 99) / 100, roomOf: { $0 / 100 }).tokens
    } else if !mqtt {
        tokens = try Seed.make(databaseURL: options.databaseURL, port: options.port, groups: 1, membersPerGroup: options.connections).members[0]
    }
    var tokensFile: String?
    if let tokens {
        tokensFile = try writeTokensFile(tokens, "tokens")
    }
    defer { if let tokensFile { unlink(tokensFile) } }
    // User space is the servers' anonymous memory (RssAnon: heap and stacks, not the code and
    // libraries mapped from files, which every process has once and VmRSS also counts).
    func serverKilobytes(_ field: String = "RssAnon") -> Int { options.serverPIDs.reduce(0) { $0 + statusKilobytes(pid: $1, field) } }
    let rssBefore = serverKilobytes(), residentBefore = serverKilobytes("VmRSS")
    let slabBefore = slabKilobytes(), buffersBefore = tcpBufferPages()

    let started = now()
    var running: [(Process, Pipe, FileHandle)] = []
    for worker in 0..<workers {
        let from = worker * options.perWorker, to = min(options.connections, from + options.perWorker)
        var arguments = ["connections-worker", "--port", String(options.port), "--broker", options.broker, "--domain", options.domain,
                         "--source", "127.0.0.\(worker + 2)", "--token-range", "\(from)-\(to)"]
        if let tokensFile { arguments += ["--tokens-file", tokensFile] }
        running.append(try spawnWorker(arguments))
    }
    // Each worker says when its connections are up (`announceLive`), then holds them.
    var live = 0, retries = 0
    var slowest = 0.0
    for (_, _, output) in running {
        let (count, seconds, retried) = try awaitLive(output)
        live += count
        retries += retried
        slowest = max(slowest, seconds)
    }
    let ramp = Double(now() - started) / 1e9
    usleep(500_000)  // let the servers settle after the last handshake (RSS, not correctness)
    let rssAfter = serverKilobytes(), residentAfter = serverKilobytes("VmRSS"), slabAfter = slabKilobytes(), buffersAfter = tcpBufferPages()
    let userBytes = live > 0 ? Double(rssAfter - rssBefore) * 1024 / Double(live) : 0
    // Both ends of every loopback connection live in this kernel: two sockets a connection.
    let kernelBytes = live > 0 ? (Double(slabAfter - slabBefore) * 1024 + Double(buffersAfter - buffersBefore) * 4096) / Double(2 * live) : 0
    print(String(format: "  %d of %d live in %.1f s (%.0f handshakes/s)%@", live, options.connections, ramp, Double(live) / max(ramp, 0.001),
                 retries > 0 ? ", \(retries) refused while busy and retried" : ""))
    print(String(format: "  server anonymous memory %d → %d MiB (RSS %d → %d MiB): %.0f user-space bytes per idle connection (goal ≤ 1,024)",
                 rssBefore / 1024, rssAfter / 1024, residentBefore / 1024, residentAfter / 1024, userBytes))
    print(String(format: "  kernel: %.0f bytes per socket (slab and TCP buffers, both ends counted)", kernelBytes))
    Report.record(["scenario": "connections", "server": options.serverName, "connections": options.connections, "live": live,
                   "server_processes": options.serverPIDs.count, "client_processes": workers,
                   "seconds": (ramp * 10).rounded() / 10, "handshakes_per_s": Int(Double(live) / max(ramp, 0.001)),
                   "user_bytes_per_connection": Int(userBytes), "kernel_bytes_per_socket": Int(kernelBytes), "retries": retries,
                   "anon_before_mib": rssBefore / 1024, "anon_after_mib": rssAfter / 1024,
                   "rss_before_mib": residentBefore / 1024, "rss_after_mib": residentAfter / 1024])
    // ROOST_BENCH_HOLD=FILE: the streams stay open until FILE exists (scripts/bench-stream's heap
    // profile stops the server while they are, so what it never freed is what they hold).
    if let hold = ProcessInfo.processInfo.environment["ROOST_BENCH_HOLD"] {
        fflush(nil)
        while access(hold, F_OK) != 0 { usleep(100_000) }
    }
    for (process, input, _) in running {
        try? input.fileHandleForWriting.close()  // a worker closes its connections at EOF
        process.waitUntilExit()
    }
}

/// One client process of `connections`: opens its share, says so, and holds them until its
/// standard input closes.
func connectionsWorker(_ options: Options) throws {
    let kind: StreamClients.Kind
    if options.broker == "mqtt" {
        kind = .mqtt(topics: options.tokenRange.map { "bench/idle/\($0)" })
    } else if options.broker == "xmpp" {
        kind = .xmpp(domain: options.domain, users: options.tokenRange.map { "m\($0)" }, rooms: options.tokenRange.map { "idle-g\($0 / 100)" })
    } else {
        let mine = try workerTokens(options)
        kind = options.broker == "matrix" ? .matrix(tokens: mine) : .roost(tokens: mine, resume: { _ in #"{"type":"resume","cursors":{}}"# })
    }
    let clients = StreamClients(port: options.port, kind: kind, source: options.source) { _, _, _, _ in }
    clients.retryLimit = 12
    let started = now()
    clients.start(inFlight: 512)
    let live = clients.awaitLive(timeout: 600, resumed: true)
    if clients.closed.load(ordering: .relaxed) > 0 {
        let error = clients.lastConnectError.load(ordering: .relaxed)
        // The counts are of attempts, retried ones included; `closed` is of connections given up.
        FileHandle.standardError.write(Data(("roost-bench: worker \(options.source ?? ""): \(clients.closed.load(ordering: .relaxed)) "
            + "connections given up; over all attempts, \(clients.connectFailures.load(ordering: .relaxed)) connects failed "
            + "(last: \(String(cString: strerror(Int32(error))))) and \(clients.refusals.load(ordering: .relaxed)) upgrades were refused; "
            + "other attempts were closed by the server\n").utf8))
    }
    announceLive(clients, live: live, since: started)
    _ = FileHandle.standardInput.readDataToEndOfFile()
    clients.stop()
}
