import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `alert --receivers P`: the members' streams spread over P worker processes (`alert-worker`),
/// so that on a machine with the cores for it no one client loop reads every receipt in turn.
/// Each worker tells, for every alert, when the first and the last of its members' copies reached
/// its kernel; the alert's span ends at the latest of those. Receive stamps and `now()` are on the
/// system-wide monotonic clock, so the workers' times and the poster's compare directly.
final class AlertReceivers {
    struct Alert {
        var workersDone = 0
        var times = ReceiptTimes()
    }
    private struct State {
        var alerts: [Alert]
        var reads = 0
        var stamped = 0
    }
    private let shared: Shared<State>
    private let workers: [(process: Process, input: Pipe)]
    private let readers: [Thread]
    /// Streams live over all workers.
    let live: Int
    let retries: Int

    /// Starts one worker per share of `tokens` and returns once each has its streams live.
    init(_ options: Options, tokens: [String]) throws {
        let path = try writeTokensFile(tokens, "alert-tokens")
        defer { unlink(path) }
        let share = (tokens.count + options.receivers - 1) / options.receivers
        var workers: [(Process, Pipe)] = []
        var outputs: [FileHandle] = []
        for worker in 0..<options.receivers {
            let from = worker * share, to = min(tokens.count, from + share)
            guard from < to else { break }
            let (process, input, output) = try spawnWorker(["alert-worker", "--port", String(options.port), "--alerts", String(options.alerts),
                                                            "--source", "127.0.0.\(worker + 2)", "--token-range", "\(from)-\(to)", "--tokens-file", path])
            workers.append((process, input))
            outputs.append(output)
        }
        self.workers = workers
        var live = 0, retries = 0
        for output in outputs {
            let up = try awaitLive(output)
            live += up.live
            retries += up.retries
        }
        self.live = live
        self.retries = retries
        let shared = Shared(State(alerts: Array(repeating: Alert(), count: options.alerts)))
        self.shared = shared
        let alerts = options.alerts
        // Then "done ALERT FIRST-RECEIPT LAST-RECEIPT LAST-READ" as each alert reaches all of its
        // streams, and "stamps STAMPED READS" (of the reads after its streams were live) when it stops.
        readers = outputs.map { output in
            let thread = Thread {
                while let line = readLine(from: output) {
                    let fields = line.split(separator: " ").compactMap { UInt64($0) }
                    if line.hasPrefix("done "), fields.count == 4, fields[0] < UInt64(alerts) {
                        shared.state.withLock { state in
                            let alert = Int(fields[0])
                            state.alerts[alert].workersDone += 1
                            state.alerts[alert].times.merge(ReceiptTimes(firstReceipt: fields[1], lastReceipt: fields[2], lastRead: fields[3]))
                        }
                    } else if line.hasPrefix("stamps "), fields.count == 2 {
                        shared.state.withLock { $0.stamped += Int(fields[0]); $0.reads += Int(fields[1]) }
                    }
                }
            }
            thread.start()
            return thread
        }
    }

    /// Whether every worker has had all its streams receive `alert`.
    func isComplete(_ alert: Int) -> Bool { shared.state.withLock { $0.alerts[alert].workersDone == workers.count } }

    func times(_ alert: Int) -> ReceiptTimes { shared.state.withLock { $0.alerts[alert].times } }

    /// The workers' CPU seconds so far.
    func workersCPUSeconds() -> Double { workers.reduce(0) { $0 + cpuSeconds(pid: $1.process.processIdentifier) } }

    /// Closes every worker's streams and waits for them; then the kernel-stamp counts are in.
    func stop() -> (reads: Int, stamped: Int) {
        for worker in workers { try? worker.input.fileHandleForWriting.close() }
        for worker in workers { worker.process.waitUntilExit() }
        while readers.contains(where: { !$0.isFinished }) { usleep(1000) }
        return shared.state.withLock { ($0.reads, $0.stamped) }
    }
}

/// One receiving process of `alert --receivers`: opens its share of the members' streams, says
/// so, then reports each alert once all of them have it, until its standard input closes.
func alertWorker(_ options: Options) throws {
    struct Tally {
        var target = Int.max
        var received: [Int]
        var times: [ReceiptTimes]
    }
    let tally = Shared(Tally(received: Array(repeating: 0, count: options.alerts), times: Array(repeating: ReceiptTimes(), count: options.alerts)))
    let output = FileHandle.standardOutput
    let kind = StreamClients.Kind.roost(tokens: try workerTokens(options), resume: { _ in #"{"type":"resume","cursors":{}}"# })
    let clients = StreamClients(port: options.port, kind: kind, source: options.source) { _, alert, time, _ in
        let read = now()
        let done: String? = tally.state.withLock { tally in
            guard alert >= 0, alert < tally.received.count else { return nil }
            tally.received[alert] += 1
            tally.times[alert].add(receipt: time, readAt: read)
            guard tally.received[alert] == tally.target else { return nil }
            let times = tally.times[alert]
            return "done \(alert) \(times.firstReceipt) \(times.lastReceipt) \(times.lastRead)\n"
        }
        if let done { output.write(Data(done.utf8)) }
    }
    clients.retryLimit = 12
    let started = now()
    clients.start(inFlight: 256)
    let live = clients.awaitLive(timeout: 300, resumed: true)
    tally.state.withLock { $0.target = live }
    let before = clients.readStamps  // the handshakes' reads are not the alerts'
    announceLive(clients, live: live, since: started)
    _ = FileHandle.standardInput.readDataToEndOfFile()
    clients.stop()
    let after = clients.readStamps
    output.write(Data("stamps \(after.stamped - before.stamped) \(after.reads - before.reads)\n".utf8))
}

/// When the first and the last copy of one post reached the clients' kernels, and when the
/// client loop read the last it read (`lastReceipt` is when the kernel got it).
struct ReceiptTimes {
    var firstReceipt: UInt64 = .max
    var lastReceipt: UInt64 = 0
    var lastRead: UInt64 = 0

    /// A copy that reached the kernel at `receipt` and was read at `readAt`.
    mutating func add(receipt: UInt64, readAt read: UInt64) {
        merge(ReceiptTimes(firstReceipt: receipt, lastReceipt: receipt, lastRead: read))
    }

    /// Another reader's times of the same post (a worker's, in `alert --receivers`).
    mutating func merge(_ other: ReceiptTimes) {
        firstReceipt = min(firstReceipt, other.firstReceipt)
        lastReceipt = max(lastReceipt, other.lastReceipt)
        lastRead = max(lastRead, other.lastRead)
    }
}

/// State behind a lock that escaping closures (a reader thread, a client loop's callback) share.
final class Shared<Value>: Sendable {
    let state: Mutex<Value>
    init(_ value: sending Value) { state = Mutex(value) }
}
