import Foundation

#if canImport(Glibc)
import Glibc
#endif

// roost-bench: measures a running `roost serve` (or mosquitto with `--broker mqtt`, ejabberd
// with `--broker xmpp`, Synapse with `--broker matrix`) from outside: release build; prints figures and the goals beside them, asserts nothing.
// scripts/bench (and scripts/bench-stream) run it pinned to the core the server is not on.
// Scenarios:
//   connections   N authenticated idle streams (MQTT subscriptions), opened by worker processes
//                 of at most 18,000 connections each, each from its own 127.0.0.x: handshakes/s,
//                 user-space bytes per idle connection, kernel bytes per socket
//   alert         one alert at a time to a group of N connected members (MQTT subscribers to one
//                 topic): POST start → last receipt
//                 (`--receivers P`: the members' streams over P client processes)
//   fanout        G groups × M members, posts (MQTT publishes) at stepped rates: deliveries per
//                 server CPU-second and latency at each step
//   posts         REST posts at concurrency C: requests/s and p99 (commit included); then paced,
//                 and at each rate of a sweep (the highest rate whose p99 stays ≤ 10 ms)
//   resume-storm  C clients reconnect at once, each E events behind: time until all are live,
//                 and the server's peak memory

struct Options {
    var scenario = ""
    var broker = "roost"
    /// ejabberd's XMPP domain (`--broker xmpp`).
    var domain = "bench.local"
    var port: UInt16 = 8080
    var databaseURL = ProcessInfo.processInfo.environment["DATABASE_URL"] ?? ""
    var serverPIDs: [Int32] = []
    /// The PostgreSQL postmaster, whose backends' CPU is counted with the server's when given.
    var databasePID: Int32?
    var members = 1000
    var groups = 100
    var alerts = 100
    /// Alert: quiet after each alert's last receipt before the next is posted (0: back to back).
    var alertGapMilliseconds = 0
    var rates = [200, 400, 800, 1600]
    var seconds = 5.0
    var concurrency = 32
    var pacedRate = 2000
    /// Posts: further paced runs, to find the highest rate with p99 ≤ 10 ms.
    var pacedSweep: [Int] = []
    /// The event loops the measured server runs (`roost serve --threads`), recorded with the
    /// fanout's figures when more than one.
    var serverLoops = 1
    var connections = 10_000
    var perWorker = 18_000
    var clients = 5000
    var behind = 50
    var sharers = 100
    var payloadBytes = 600
    var source: String?
    var tokensFile: String?
    var tokenRange = 0..<0
    /// Alert: the members' streams over this many client processes (Roost only).
    var receivers = 1
    /// Where the server, PostgreSQL and the clients ran, when scripts/bench gave them cores of
    /// their own (its event-loop sweep): recorded with the alert's and the fanout's figures,
    /// which the report then keeps apart from the one-core comparison.
    var layout: String?

    var serverPID: Int32 { serverPIDs.first ?? 0 }

    /// A run of the event-loop sweep says so in its record: its layout, and its loops even at one.
    func recordLayout(in record: inout [String: Any]) {
        guard let layout else { return }
        record["layout"] = layout
        record["loops"] = serverLoops
    }

    /// PostgreSQL's CPU seconds so far, counted with the server's (0 without `--database-pid`).
    func databaseCPU() -> Double { databasePID.map { databaseCPUSeconds(postmaster: $0) } ?? 0 }

    /// The server's name in reports.
    var serverName: String { ["mqtt": "mosquitto", "xmpp": "ejabberd", "matrix": "synapse"][broker] ?? "roost" }
    /// The server and how it is spoken to, in printed headings.
    var serverLabel: String {
        ["mqtt": "mosquitto, MQTT 3.1.1 QoS 0", "xmpp": "ejabberd, XMPP MUC with mod_mam", "matrix": "Synapse, Matrix rooms with /sync long-polls"][broker] ?? "Roost"
    }

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        guard let scenario = rest.popFirst() else { throw BenchError(Self.usage) }
        self.scenario = scenario
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { throw BenchError("\(flag) needs a value") }
            func number() throws -> Int {
                guard let number = Int(value), number >= 0 else { throw BenchError("\(flag) needs a whole number, not '\(value)'") }
                return number
            }
            switch flag {
            case "--broker":
                guard ["roost", "mqtt", "xmpp", "matrix"].contains(value) else { throw BenchError("--broker is roost, mqtt, xmpp or matrix") }
                broker = value
            case "--domain": domain = value
            case "--port": port = UInt16(try number())
            case "--database-url": databaseURL = value
            case "--server-pid", "--server-pids": serverPIDs = value.split(separator: ",").compactMap { Int32($0) }
            case "--database-pid": databasePID = Int32(try number())
            case "--members": members = try number()
            case "--groups": groups = try number()
            case "--alerts": alerts = try number()
            case "--gap-ms":
                alertGapMilliseconds = try number()
                guard (0...60_000).contains(alertGapMilliseconds) else { throw BenchError("--gap-ms is 0 to 60000") }
            case "--rates": rates = value.split(separator: ",").compactMap { Int($0) }
            case "--seconds": seconds = Double(value) ?? seconds
            case "--concurrency": concurrency = try number()
            case "--paced-rate": pacedRate = try number()
            case "--paced-sweep": pacedSweep = value.split(separator: ",").compactMap { Int($0) }
            case "--server-loops": serverLoops = max(1, try number())
            case "--connections": connections = try number()
            case "--per-worker": perWorker = max(1, try number())
            case "--receivers": receivers = max(1, try number())
            case "--layout": layout = value
            case "--clients": clients = try number()
            case "--behind": behind = try number()
            case "--sharers": sharers = try number()
            case "--payload-bytes": payloadBytes = try number()
            case "--source": source = value
            case "--tokens-file": tokensFile = value
            case "--token-range":
                let bounds = value.split(separator: "-").compactMap { Int($0) }
                guard bounds.count == 2, bounds[0] <= bounds[1] else { throw BenchError("--token-range is FROM-TO") }
                tokenRange = bounds[0]..<bounds[1]
            case "--results": Report.resultsPath = value
            case "--latencies": Report.latenciesPath = value
            default: throw BenchError("unknown option \(flag)\n\(Self.usage)")
            }
        }
        let worker = scenario == "connections-worker" || scenario == "alert-worker"
        guard worker || !serverPIDs.isEmpty else { throw BenchError("--server-pid is required\n\(Self.usage)") }
        guard broker == "mqtt" || broker == "matrix" || worker || !databaseURL.isEmpty else {
            throw BenchError("--database-url is required for Roost and ejabberd\n\(Self.usage)")
        }
        guard receivers == 1 || broker == "roost" else { throw BenchError("--receivers spreads Roost's streams only") }
    }

    static let usage = """
        usage: roost-bench connections|alert|live-location|fanout|posts|resume-storm --port PORT --server-pid PID[,PID...]
               [--broker roost|mqtt|xmpp|matrix] [--domain XMPP-DOMAIN] [--database-url URL] [--database-pid POSTMASTER] [--results FILE] [--latencies FILE]
               connections:  [--connections N] [--per-worker N]
               alert:        [--members N] [--alerts N] [--gap-ms MS (quiet after each)] [--receivers P (client processes)] [--server-loops N]
                             [--payload-bytes B (mqtt)]
               live-location: [--members N] [--sharers S] [--seconds T]
               fanout:       [--groups G] [--members M] [--rates R1,R2,..] [--seconds S] [--payload-bytes B (mqtt)] [--server-loops N]
               posts:        [--concurrency C] [--seconds S] [--paced-rate R] [--paced-sweep R1,R2,..]
               resume-storm: [--clients C] [--behind E]
               alert, fanout: [--layout TEXT (the cores each part ran on, recorded with the figures)]
               media:        [--concurrency C] [--seconds S]
        """
}

raiseDescriptorLimit()
do {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    switch options.scenario {
    case "connections": try connectionsScenario(options)
    case "connections-worker": try connectionsWorker(options)
    case "alert-worker": try alertWorker(options)
    case "alert": try alertScenario(options)
    case "live-location": try liveLocationScenario(options)
    case "fanout": try fanoutScenario(options)
    case "posts": try postsScenario(options)
    case "resume-storm": try resumeStormScenario(options)
    case "media": try mediaScenario(options)
    default: throw BenchError(Options.usage)
    }
} catch {
    FileHandle.standardError.write(Data("roost-bench: \(error)\n".utf8))
    exit(2)
}
