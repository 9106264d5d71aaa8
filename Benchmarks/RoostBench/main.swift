import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// roost-bench: measures a running `roost serve` from outside (release build; prints figures and
// the goals beside them, asserts nothing). scripts/bench-stream runs it pinned to the core the
// server is not on. Scenarios:
//   alert   one alert at a time to a group of N connected members: POST start → last receipt
//   fanout  G groups × M members, posts at fixed rates: deliveries per server CPU-second, p99
//   posts   REST posts at concurrency C: requests/s and p99 (commit included); then paced at R/s

struct Options {
    var scenario = ""
    var port: UInt16 = 8080
    var databaseURL = ProcessInfo.processInfo.environment["DATABASE_URL"] ?? ""
    var serverPID: Int32 = 0
    var members = 1000
    var groups = 100
    var alerts = 100
    var rates = [200, 400, 800, 1600]
    var seconds = 5.0
    var concurrency = 32
    var pacedRate = 2000

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        guard let scenario = rest.popFirst() else { throw BenchError(Self.usage) }
        self.scenario = scenario
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { throw BenchError("\(flag) needs a value") }
            switch flag {
            case "--port": port = UInt16(value) ?? 0
            case "--database-url": databaseURL = value
            case "--server-pid": serverPID = Int32(value) ?? 0
            case "--members": members = Int(value) ?? members
            case "--groups": groups = Int(value) ?? groups
            case "--alerts": alerts = Int(value) ?? alerts
            case "--rates": rates = value.split(separator: ",").compactMap { Int($0) }
            case "--seconds": seconds = Double(value) ?? seconds
            case "--concurrency": concurrency = Int(value) ?? concurrency
            case "--paced-rate": pacedRate = Int(value) ?? pacedRate
            default: throw BenchError("unknown option \(flag)\n\(Self.usage)")
            }
        }
        guard !databaseURL.isEmpty, serverPID > 0 else { throw BenchError("--database-url and --server-pid are required\n\(Self.usage)") }
    }

    static let usage = """
        usage: roost-bench alert|fanout|posts --port PORT --database-url URL --server-pid PID
               [--members N] [--groups G] [--alerts N] [--rates R1,R2,..] [--seconds S] [--concurrency C] [--paced-rate R]
        """
}

/// Post bookkeeping shared by the posting threads and the stream loop.
final class Ledger: Sendable {
    struct State {
        var started: [UInt64]
        var received: [Int]
        var lastReceipt: [UInt64]
        var latencies: [UInt64] = []
    }
    let state: Mutex<State>
    init(capacity: Int) { state = Mutex(State(started: Array(repeating: 0, count: capacity), received: Array(repeating: 0, count: capacity),
                                              lastReceipt: Array(repeating: 0, count: capacity))) }

    func start(_ post: Int) { state.withLock { $0.started[post] = now() } }

    func delivered(_ post: Int, at time: UInt64) {
        state.withLock { state in
            guard post < state.received.count, state.started[post] > 0 else { return }
            state.received[post] += 1
            state.lastReceipt[post] = max(state.lastReceipt[post], time)
            state.latencies.append(time - state.started[post])
        }
    }
}

func post(_ poster: HTTPPoster, group: UUID, index: Int, token: String, kind: String) throws -> Int {
    let body = #"{"client_msg_id":"b\#(index)-\#(UUID().uuidString.prefix(8))","kind":"\#(kind)","text":"bench:\#(index): someone at the gate"}"#
    return try poster.request("POST", "/v1/groups/\(group.uuidString.lowercased())/messages", body: body, token: token).0
}

func connect(_ options: Options, tokens: [String], ledger: Ledger) -> StreamClients {
    let clients = StreamClients(port: options.port, tokens: tokens) { _, post, time in ledger.delivered(post, at: time) }
    let started = now()
    clients.start()
    let live = clients.awaitLive(timeout: 120)
    let elapsed = Double(now() - started) / 1e9
    print(String(format: "  %d of %d streams live in %.1f s (%.0f handshakes/s); server RSS %d MiB", live, tokens.count, elapsed,
                 Double(live) / elapsed, statusKilobytes(pid: options.serverPID, "VmRSS") / 1024))
    return clients
}

func alertScenario(_ options: Options) throws {
    print("alert: one alert at a time to a group of \(options.members) connected members, \(options.alerts) alerts")
    let seed = try Seed.make(databaseURL: options.databaseURL, groups: 1, membersPerGroup: options.members)
    let ledger = Ledger(capacity: options.alerts + 1)
    let clients = connect(options, tokens: seed.members[0], ledger: ledger)
    defer { clients.stop() }
    let poster = try HTTPPoster(port: options.port)
    var spans: [UInt64] = []
    var incomplete = 0
    for index in 0..<options.alerts {
        ledger.start(index)
        let status = try post(poster, group: seed.groups[0], index: index, token: seed.posterToken, kind: "alert")
        guard status == 201 else { throw BenchError("post answered \(status)") }
        let deadline = now() + 5_000_000_000
        while ledger.state.withLock({ $0.received[index] }) < clients.live.load(ordering: .relaxed) && now() < deadline { usleep(100) }
        let (received, last, started) = ledger.state.withLock { ($0.received[index], $0.lastReceipt[index], $0.started[index]) }
        if received < clients.live.load(ordering: .relaxed) { incomplete += 1 } else { spans.append(last - started) }
    }
    spans.sort()
    print("  POST start → last member's receipt: p50 \(milliseconds(percentile(spans, 0.5))), p99 \(milliseconds(percentile(spans, 0.99))), "
          + "max \(milliseconds(spans.last ?? 0))  (goal at 1,000 members: p99 ≤ 20 ms; at 10,000: p99 ≤ 100 ms)")
    if incomplete > 0 { print("  \(incomplete) alerts did not reach every member within 5 s") }
}

func fanoutScenario(_ options: Options) throws {
    print("fanout: \(options.groups) groups × \(options.members) members, posts spread over the groups at fixed rates, \(options.seconds) s a step")
    let seed = try Seed.make(databaseURL: options.databaseURL, groups: options.groups, membersPerGroup: options.members)
    let perStep = options.rates.map { Int(Double($0) * options.seconds) }
    let ledger = Ledger(capacity: perStep.reduce(0, +) + 1)
    let clients = connect(options, tokens: seed.members.flatMap { $0 }, ledger: ledger)
    defer { clients.stop() }
    let live = clients.live.load(ordering: .relaxed)
    let perPost = live / options.groups
    var first = 0
    print("  rate posts/s | deliveries/s | server CPU | deliveries per CPU-s | p50 | p99 | missing")
    for (rate, count) in zip(options.rates, perStep) {
        let cpuBefore = cpuSeconds(pid: options.serverPID)
        let latenciesBefore = ledger.state.withLock { $0.latencies.count }
        let began = now()
        // Eight posting threads take tickets; post i is due at began + i / rate.
        let next = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let group = DispatchGroup()
        let range = first..<(first + count)
        for _ in 0..<8 {
            group.enter()
            Thread {
                defer { group.leave() }
                guard let poster = try? HTTPPoster(port: options.port) else { return }
                while true {
                    let ticket = next.add(1, ordering: .relaxed).oldValue
                    guard ticket < count else { return }
                    let due = began + UInt64(Double(ticket) / Double(rate) * 1e9)
                    let wait = Int64(due) - Int64(now())
                    if wait > 0 { usleep(UInt32(wait / 1000)) }
                    let index = range.lowerBound + ticket
                    ledger.start(index)
                    if (try? post(poster, group: seed.groups[ticket % seed.groups.count], index: index, token: seed.posterToken, kind: "chat")) != 201 {
                        failures.add(1, ordering: .relaxed)
                    }
                }
            }.start()
        }
        group.wait()
        // Let the last deliveries arrive (bounded).
        let expected = count * perPost
        let deadline = now() + 5_000_000_000
        while ledger.state.withLock({ $0.latencies.count - latenciesBefore }) < expected && now() < deadline { usleep(1000) }
        let elapsed = Double(now() - began) / 1e9
        let cpu = cpuSeconds(pid: options.serverPID) - cpuBefore
        var samples = ledger.state.withLock { Array($0.latencies[latenciesBefore...]) }
        samples.sort()
        let delivered = samples.count
        print(String(format: "  %6d | %9.0f | %5.2f s | %9.0f | %@ | %@ | %d%@", rate, Double(delivered) / elapsed, cpu,
                     cpu > 0 ? Double(delivered) / cpu : 0, milliseconds(percentile(samples, 0.5)), milliseconds(percentile(samples, 0.99)),
                     expected - delivered, failures.load(ordering: .relaxed) > 0 ? " (\(failures.load(ordering: .relaxed)) posts failed)" : ""))
        first += count
    }
    print("  (goal: ≥ 150,000 deliveries per server CPU-second; server CPU is roost's own, PostgreSQL's is not counted)")
}

func postsScenario(_ options: Options) throws {
    print("posts: REST message posts, commit included")
    let seed = try Seed.make(databaseURL: options.databaseURL, groups: 32, membersPerGroup: 1)
    func run(concurrency: Int, rate: Int?) -> (Double, [UInt64], Int) {
        let total = rate.map { Int(Double($0) * options.seconds) } ?? Int.max
        let next = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let latencies = Mutex<[UInt64]>([])
        let began = now()
        let end = began + UInt64(options.seconds * 1e9)
        let group = DispatchGroup()
        for thread in 0..<concurrency {
            group.enter()
            Thread {
                defer { group.leave() }
                guard let poster = try? HTTPPoster(port: options.port) else { return }
                var mine: [UInt64] = []
                while true {
                    let ticket = next.add(1, ordering: .relaxed).oldValue
                    guard ticket < total else { break }
                    if let rate {
                        let due = began + UInt64(Double(ticket) / Double(rate) * 1e9)
                        let wait = Int64(due) - Int64(now())
                        if wait > 0 { usleep(UInt32(wait / 1000)) }
                    } else if now() >= end {
                        break
                    }
                    let start = now()
                    if (try? post(poster, group: seed.groups[thread % seed.groups.count], index: ticket, token: seed.posterToken, kind: "chat")) != 201 {
                        failures.add(1, ordering: .relaxed)
                    }
                    mine.append(now() - start)
                }
                latencies.withLock { $0 += mine }
            }.start()
        }
        group.wait()
        let elapsed = Double(now() - began) / 1e9
        return (elapsed, latencies.withLock { $0 }.sorted(), failures.load(ordering: .relaxed))
    }
    let (elapsed, samples, failed) = run(concurrency: options.concurrency, rate: nil)
    print(String(format: "  concurrency %d, as fast as they go: %.0f posts/s, p50 %@, p99 %@%@", options.concurrency, Double(samples.count) / elapsed,
                 milliseconds(percentile(samples, 0.5)), milliseconds(percentile(samples, 0.99)), failed > 0 ? " (\(failed) failed)" : ""))
    let (pacedElapsed, paced, pacedFailed) = run(concurrency: options.concurrency, rate: options.pacedRate)
    print(String(format: "  paced at %d/s: %.0f posts/s achieved, p50 %@, p99 %@%@  (goal: p99 ≤ 10 ms at 2,000/s)", options.pacedRate,
                 Double(paced.count) / pacedElapsed, milliseconds(percentile(paced, 0.5)), milliseconds(percentile(paced, 0.99)),
                 pacedFailed > 0 ? " (\(pacedFailed) failed)" : ""))
}

raiseDescriptorLimit()
do {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    switch options.scenario {
    case "alert": try alertScenario(options)
    case "fanout": try fanoutScenario(options)
    case "posts": try postsScenario(options)
    default: throw BenchError(Options.usage)
    }
} catch {
    FileHandle.standardError.write(Data("roost-bench: \(error)\n".utf8))
    exit(2)
}
