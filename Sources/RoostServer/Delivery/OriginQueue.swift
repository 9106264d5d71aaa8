import Foundation
import RoostProtocol
import Synchronization

/// The deliveries waiting for one origin (a push service, a webhook), and the threads that send
/// them, each over a kept connection of its own (`OriginLink`): at most `connections` threads,
/// so at most that many connections to the origin, started as the queue grows and ended after
/// `idleSeconds` with nothing to send.
///
/// The origin's health is its own: a `429` pauses this origin for its `Retry-After` (what is
/// queued and what comes meanwhile is deferred to then, without counting an attempt); after
/// `breakerFailures` failures in a row (5xx, timeouts, connections refused) the breaker opens
/// for `breakerSeconds` (doubling while it keeps failing, at most 5 minutes), and deliveries
/// to the origin fail that attempt at once instead of waiting on it. A service that is down or
/// slow so holds its own threads only, never another origin's.
final class OriginQueue: @unchecked Sendable {
    /// A delivery for the origin: `send` runs on one of its threads and hands its outcome to
    /// `finish` (at once, or later from an HTTP/2 connection's thread); `done` hears the outcome
    /// (or the outcome of not sending it).
    struct Work: Sendable {
        let send: @Sendable (OriginLink, _ finish: @escaping @Sendable (DeliveryOutcome) -> Void) -> Void
        let done: @Sendable (DeliveryOutcome) -> Void
    }

    struct Settings: Sendable {
        var connections = 64
        var idleSeconds = 30.0
        var breakerFailures = 8
        var breakerSeconds = 15.0
        var timeoutSeconds = 10
    }

    let counters: OriginCounters
    private let settings: Settings
    private let makeLink: () -> OriginLink
    // Everything below is guarded by `condition`.
    private let condition = NSCondition()
    private var waiting: [Work] = []
    private var head = 0
    private var threads = 0
    private var idle = 0
    private var pausedUntil: Date?
    private var failuresInARow = 0
    private var openUntil: Date?
    private var openings = 0
    private var closing = false

    init(origin: String, settings: Settings, makeLink: @escaping (OriginCounters) -> OriginLink) {
        let counters = OriginCounters(origin: origin)
        self.counters = counters
        self.settings = settings
        self.makeLink = { makeLink(counters) }
    }

    /// Deliveries waiting for a thread.
    var backlog: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiting.count - head
    }

    func submit(_ work: Work) {
        condition.lock()
        if let refusal = refusal(now: Date()) {
            condition.unlock()
            work.done(refusal)
            return
        }
        waiting.append(work)
        let start = idle == 0 && threads < settings.connections
        if start { threads += 1 }
        condition.signal()
        condition.unlock()
        if start {
            let thread = Thread { [self] in run() }
            thread.name = "roost-origin"
            thread.stackSize = 512 * 1024
            thread.start()
        }
    }

    /// Why a delivery is not sent now, with the lock held: the origin paused or its breaker open.
    private func refusal(now: Date) -> DeliveryOutcome? {
        if let pausedUntil, pausedUntil > now {
            return .deferred(until: pausedUntil, "\(counters.origin) asked to slow down")
        }
        if let openUntil, openUntil > now {
            return .retry("\(counters.origin) failed \(failuresInARow) times in a row; not tried for \(Int(openUntil.timeIntervalSince(now).rounded(.up))) s")
        }
        return nil
    }

    private func run() {
        let link = makeLink()
        while true {
            condition.lock()
            while head == waiting.count {
                idle += 1
                let woke = closing || condition.wait(until: Date().addingTimeInterval(settings.idleSeconds))
                idle -= 1
                if (!woke || closing) && head == waiting.count {
                    threads -= 1
                    condition.unlock()
                    link.drop()
                    return
                }
            }
            let work = waiting[head]
            head += 1
            if head > 1024 && head * 2 > waiting.count {
                waiting.removeFirst(head)
                head = 0
            }
            // Whatever was queued before the origin paused or failed is not sent either.
            let refused = refusal(now: Date())
            condition.unlock()
            if let refused {
                work.done(refused)
                continue
            }
            work.send(link) { [self] outcome in
                let drained = settle(outcome)
                work.done(outcome)
                for (other, outcome) in drained { other.done(outcome) }
            }
        }
    }

    /// Ends the queue's threads once they have nothing left to send, each closing its connection
    /// now rather than after `idleSeconds`: the worker that owned the queue is gone, and a
    /// thread that woke later (say while the process exits, after OpenSSL has cleaned up) must
    /// not be the one to free a TLS connection.
    func shutDown() {
        condition.lock()
        closing = true
        condition.broadcast()
        condition.unlock()
    }

    /// Takes in an outcome: a slow-down pauses the origin, a run of failures opens the breaker
    /// (each time for longer), anything else closes it. Returns the queued work so refused.
    private func settle(_ outcome: DeliveryOutcome) -> [(Work, DeliveryOutcome)] {
        condition.lock()
        defer { condition.unlock() }
        let now = Date()
        switch outcome {
        case .deferred(let until, _):
            pausedUntil = max(pausedUntil ?? until, until)
        case .retry:
            failuresInARow += 1
            if failuresInARow >= settings.breakerFailures, openUntil.map({ $0 <= now }) ?? true {
                let seconds = min(300, settings.breakerSeconds * pow(2, Double(min(openings, 5))))
                openings += 1
                openUntil = now.addingTimeInterval(seconds)
            }
        case .delivered, .failed, .gone:
            failuresInARow = 0
            openings = 0
            openUntil = nil
        }
        guard let refusal = refusal(now: now) else { return [] }
        let refused = waiting[head...].map { ($0, refusal) }
        waiting.removeAll(keepingCapacity: true)
        head = 0
        return refused
    }
}

/// Every origin's queue, made as deliveries first name the origin.
final class OriginQueues: Sendable {
    private let queues = Mutex<[String: OriginQueue]>([:])
    private let settings: OriginQueue.Settings
    private let network: OutboundNetwork
    private let tls: TLSClientContext?
    private let sessions = TLSSessionCache()

    private let http2: HTTP2Pools?

    /// `http2Connections`: HTTP/2 connections to one origin, at most, when it offers HTTP/2 (0
    /// speaks HTTP/1.1 only).
    init(settings: OriginQueue.Settings, network: OutboundNetwork, tls: TLSClientContext?, http2Connections: Int) {
        self.settings = settings
        self.network = network
        self.tls = tls
        http2 = http2Connections > 0 ? HTTP2Pools(connectionsPerOrigin: http2Connections) : nil
    }

    /// The queue of `origin`, made with at most `connections` connections the first time.
    func queue(for origin: String, connections: Int) -> OriginQueue {
        queues.withLock { queues in
            if let queue = queues[origin] { return queue }
            var settings = settings
            settings.connections = max(1, connections)
            let (network, tls, sessions, http2) = (network, tls, sessions, self.http2)
            let queue = OriginQueue(origin: origin, settings: settings) { counters in
                OriginLink(network: network, tls: tls, sessions: sessions, http2: http2, timeoutSeconds: settings.timeoutSeconds,
                           idleSeconds: settings.idleSeconds, counters: counters)
            }
            queues[origin] = queue
            return queue
        }
    }

    /// Ends every origin's threads and HTTP/2 connections as soon as they are idle.
    func shutDown() {
        for queue in queues.withLock({ Array($0.values) }) { queue.shutDown() }
        http2?.shutDown()
    }

    /// Each origin's connection counters, for the metrics.
    var counters: [OriginCounters] { queues.withLock { $0.values.map(\.counters) } }
}
