import CLinuxEvents
import Foundation
import RoostProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/2 connection to an origin, carrying many requests at once: any thread of the
/// origin's queue submits a request and goes on, and the response comes back on the
/// connection's own thread, which alone reads and writes the socket (an OpenSSL connection is
/// not to be used from two threads at once). The protocol is `HTTP2ClientSession`'s; this
/// class moves its bytes, keeps each request's deadline (a request not answered by then is
/// cancelled with RST_STREAM and fails), and ends the connection after `idleSeconds` without a
/// request, or when either side ends it.
final class HTTP2Connection: @unchecked Sendable {
    typealias Completion = @Sendable (Result<HTTPResponseFraming.Response, OutboundFailure>) -> Void

    let origin: String
    private let stream: OutboundStream
    private let idleSeconds: Double
    private let wake: Int32
    private let onStreamFreed: @Sendable () -> Void
    private let onClosed: @Sendable (HTTP2Connection) -> Void
    // Guarded by `lock`.
    private let lock = NSLock()
    private var session: HTTP2ClientSession
    private var waiting: [UInt32: (deadline: ContinuousClock.Instant, completion: Completion)] = [:]
    private var lastUsed = ContinuousClock.now

    /// Takes over `stream`, on which TLS settled on `h2`, and starts its thread.
    init(stream: OutboundStream, origin: String, idleSeconds: Double, settings: HTTP2ClientSession.Settings = .init(),
         onStreamFreed: @escaping @Sendable () -> Void, onClosed: @escaping @Sendable (HTTP2Connection) -> Void) throws(OutboundFailure) {
        self.stream = stream
        self.origin = origin
        self.idleSeconds = idleSeconds
        self.onStreamFreed = onStreamFreed
        self.onClosed = onClosed
        session = HTTP2ClientSession(settings: settings)
        wake = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard wake >= 0 else { throw OutboundFailure("eventfd failed: \(String(cString: strerror(errno)))") }
        let thread = Thread { [self] in run() }
        thread.name = "roost-h2"
        thread.stackSize = 512 * 1024
        thread.start()
    }

    deinit { Glibc.close(wake) }

    /// Requests this connection could still take now.
    var spare: Int {
        lock.withLock { session.spareStreams }
    }

    /// Ends the connection once its open streams are answered (GOAWAY; no new streams).
    func shutDown() {
        _ = lock.withLock { session.shutDown() }
        ring()
    }

    /// Sends a request; `completion` hears its response or failure on the connection's thread.
    /// False when the connection cannot take it now (its streams are all in use, or it is ending).
    func submit(_ fields: [(name: String, value: String)], body: [UInt8], deadline: ContinuousClock.Instant, completion: @escaping Completion) -> Bool {
        let opened = lock.withLock { () -> Bool in
            guard let id = session.open(fields, body: body) else { return false }
            waiting[id] = (deadline, completion)
            lastUsed = .now
            return true
        }
        if opened { ring() }
        return opened
    }

    private func ring() {
        var one: UInt64 = 1
        _ = Glibc.write(wake, &one, 8)
    }

    /// The connection's loop: writes what the session has to send, reads what comes, and hands
    /// each finished stream to its completion, until the session closes.
    private func run() {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var writeBlockedOn: OutboundStream.Blocked?
        var reason = "the connection ended"
        while true {
            let (now, more, closed, wakeAt) = lock.withLock { () -> (ContinuousClock.Instant, [UInt8], Bool, ContinuousClock.Instant) in
                let now = ContinuousClock.now
                // Idle for long enough: say goodbye (the server may close it sooner, which is fine too).
                if waiting.isEmpty, !session.goingAway, lastUsed.duration(to: now) > .seconds(idleSeconds) { _ = session.shutDown() }
                // Up at the first stream's deadline, or when it will have been idle long enough.
                let wakeAt = waiting.isEmpty ? lastUsed + .seconds(idleSeconds) + .milliseconds(10)
                    : min(waiting.values.map(\.deadline).min()!, now + .seconds(idleSeconds))
                return (now, session.takeOutput(), session.isClosed, wakeAt)
            }
            pending += more
            do throws(OutboundFailure) {
                // Write as much as the socket takes now.
                writeBlockedOn = nil
                while !pending.isEmpty {
                    let (written, blocked) = try stream.writeNow(pending[...])
                    if let blocked { writeBlockedOn = blocked; break }
                    pending.removeFirst(written)
                }
                if closed, pending.isEmpty || writeBlockedOn != nil { break }
                var wanted = Int16(POLLIN)
                if writeBlockedOn == .writing { wanted |= Int16(POLLOUT) }
                var poller = [pollfd(fd: stream.descriptor, events: wanted, revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&poller, 2, OutboundStream.pollTimeout(now.duration(to: wakeAt)))
                if ready < 0, errno != EINTR { throw OutboundFailure("poll failed: \(String(cString: strerror(errno)))") }
                if poller[1].revents != 0 {
                    var count: UInt64 = 0
                    _ = Glibc.read(wake, &count, 8)
                }
                // Read everything that has come (TLS may hold more than the socket shows).
                var received: [UInt8] = []
                while case .success(let count) = try stream.readNow(into: &buffer) {
                    if count == 0 { throw OutboundFailure("\(origin) closed the connection") }
                    received += buffer[0..<count]
                }
                let answers = lock.withLock { () -> [(Completion, Result<HTTPResponseFraming.Response, OutboundFailure>)] in
                    var answers = received.isEmpty ? [] : takeAnswers(session.receive(received))
                    // What is still waiting past its deadline is cancelled (RST_STREAM) and fails.
                    let now = ContinuousClock.now
                    for (id, entry) in waiting where entry.deadline <= now {
                        session.cancel(id)
                        waiting[id] = nil
                        answers.append((entry.completion, .failure(OutboundFailure("\(origin) did not answer in time"))))
                    }
                    return answers
                }
                deliver(answers)
            } catch {
                reason = error.description
                break
            }
        }
        deliver(lock.withLock { takeAnswers(session.lost(reason)) })
        stream.close()
        onClosed(self)
    }

    /// With the lock held: the completion of each stream `events` ended, taken out of
    /// `waiting`, with what it came to.
    private func takeAnswers(_ events: [HTTP2ClientSession.Event]) -> [(Completion, Result<HTTPResponseFraming.Response, OutboundFailure>)] {
        events.compactMap { event in
            switch event {
            case .response(let id, let response):
                waiting.removeValue(forKey: id).map { ($0.completion, .success(HTTPResponseFraming.Response(status: response.status, headers: response.headers))) }
            case .streamFailed(let id, let reason, _):
                waiting.removeValue(forKey: id).map { ($0.completion, .failure(OutboundFailure("\(origin): \(reason)"))) }
            case .closed:
                nil
            }
        }
    }

    /// Hands each answer to its request, outside the lock (a completion settles its origin's queue).
    private func deliver(_ answers: [(Completion, Result<HTTPResponseFraming.Response, OutboundFailure>)]) {
        for (completion, result) in answers {
            completion(result)
            onStreamFreed()
        }
    }
}

/// The HTTP/2 connections of one origin, shared by all its queue's threads: a request goes on
/// the connection with the most streams to spare; a new connection is opened only when every
/// one is full, up to `maxConnections`; beyond that a request waits for a stream to free.
final class HTTP2Pool: @unchecked Sendable {
    let origin: String
    let maxConnections: Int
    let counters: OriginCounters
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var connections: [HTTP2Connection] = []
    private var opening = 0
    private var known: Bool?

    init(origin: String, maxConnections: Int, counters: OriginCounters) {
        self.origin = origin
        self.maxConnections = max(1, maxConnections)
        self.counters = counters
    }

    /// Whether the origin's last new connection settled on HTTP/2 (nil before the first).
    var speaksHTTP2: Bool? {
        condition.lock()
        defer { condition.unlock() }
        return known
    }

    enum Reservation {
        case connection(HTTP2Connection)
        /// No connection has a stream to spare and there is room for one more: the caller opens it.
        case open
        /// The origin speaks HTTP/1.1 only: the caller sends that way.
        case http11
    }

    /// A connection with a stream to spare, or leave to open one; waits while every connection
    /// is full and there are `maxConnections` (or the first is being opened), until `deadline`.
    /// `.http11` once the origin turned out to speak HTTP/1.1 only.
    func reserve(by deadline: ContinuousClock.Instant) throws(OutboundFailure) -> Reservation {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if known == false { return .http11 }
            let spares = connections.map { ($0, $0.spare) }
            if let best = spares.max(by: { $0.1 < $1.1 }), best.1 > 0 { return .connection(best.0) }
            // What the origin speaks is learned from one connection before any other opens.
            if connections.count + opening < maxConnections, known != nil || opening == 0 {
                opening += 1
                return .open
            }
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw OutboundFailure("\(origin): every HTTP/2 stream stayed busy until the deadline") }
            _ = condition.wait(until: Date().addingTimeInterval(Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18))
        }
    }

    /// After `.open`: the connection made (nil if it failed, or settled on HTTP/1.1).
    func opened(_ connection: HTTP2Connection?, speaksHTTP2: Bool?) {
        condition.lock()
        opening -= 1
        if let connection {
            connections.append(connection)
            counters.opened(resumed: false)
        }
        if let speaksHTTP2 { known = speaksHTTP2 }
        condition.broadcast()
        condition.unlock()
    }

    /// Learns what a connection opened elsewhere (by the HTTP/1.1 path) settled on.
    func adopt(_ connection: HTTP2Connection) {
        condition.lock()
        connections.append(connection)
        known = true
        counters.opened(resumed: false)
        condition.broadcast()
        condition.unlock()
    }

    func streamFreed() {
        condition.lock()
        condition.signal()
        condition.unlock()
    }

    /// Ends every connection once its streams are answered.
    func shutDown() {
        condition.lock()
        let all = connections
        condition.unlock()
        for connection in all { connection.shutDown() }
    }

    func closed(_ connection: HTTP2Connection) {
        condition.lock()
        connections.removeAll { $0 === connection }
        counters.closed()
        condition.broadcast()
        condition.unlock()
    }
}

/// Every origin's HTTP/2 pool, made the first time a thread of the origin's queue posts to it.
final class HTTP2Pools: Sendable {
    private let pools = Mutex<[String: HTTP2Pool]>([:])
    let connectionsPerOrigin: Int

    init(connectionsPerOrigin: Int) { self.connectionsPerOrigin = connectionsPerOrigin }

    func shutDown() {
        for pool in pools.withLock({ Array($0.values) }) { pool.shutDown() }
    }

    func pool(for origin: String, counters: OriginCounters) -> HTTP2Pool {
        pools.withLock { pools in
            if let pool = pools[origin] { return pool }
            let pool = HTTP2Pool(origin: origin, maxConnections: connectionsPerOrigin, counters: counters)
            pools[origin] = pool
            return pool
        }
    }
}
