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

    /// Whether it takes requests at all (not ending, not ended).
    var usable: Bool { lock.withLock { !session.goingAway } }

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
            let (now, more, closed, deadline) = lock.withLock { () -> (ContinuousClock.Instant, [UInt8], Bool, ContinuousClock.Instant?) in
                let now = ContinuousClock.now
                // Idle for long enough: say goodbye (the server may close it sooner, which is fine too).
                if waiting.isEmpty, !session.goingAway, lastUsed.duration(to: now) > .seconds(idleSeconds) { _ = session.shutDown() }
                return (now, session.takeOutput(), session.isClosed, waiting.values.map(\.deadline).min())
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
                let wakeAt = min(deadline ?? now + .seconds(idleSeconds), lastUsedDeadline(now))
                var poller = [pollfd(fd: stream.descriptor, events: wanted, revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&poller, 2, Self.milliseconds(until: wakeAt, from: now))
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
                var events: [HTTP2ClientSession.Event] = []
                var expired: [Completion] = []
                lock.withLock {
                    if !received.isEmpty { events = session.receive(received) }
                    let now = ContinuousClock.now
                    for (id, entry) in waiting where entry.deadline <= now && !events.contains(where: { $0.stream == id }) {
                        session.cancel(id)
                        waiting[id] = nil
                        expired.append(entry.completion)
                    }
                }
                finish(events)
                for completion in expired {
                    completion(.failure(OutboundFailure("\(origin) did not answer in time")))
                    onStreamFreed()
                }
            } catch {
                reason = error.description
                break
            }
        }
        let events = lock.withLock { session.lost(reason) }
        finish(events)
        stream.close()
        onClosed(self)
    }

    /// When the connection has been idle long enough to end (or far enough off not to matter).
    private func lastUsedDeadline(_ now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        lock.withLock { waiting.isEmpty ? lastUsed + .seconds(idleSeconds) + .milliseconds(10) : now + .seconds(idleSeconds) }
    }

    /// Hands what the session reported to the requests waiting for it.
    private func finish(_ events: [HTTP2ClientSession.Event]) {
        for event in events {
            let completion: Completion?
            let result: Result<HTTPResponseFraming.Response, OutboundFailure>
            switch event {
            case .response(let id, let response):
                completion = lock.withLock { waiting.removeValue(forKey: id)?.completion }
                result = .success(HTTPResponseFraming.Response(status: response.status, headers: response.headers))
            case .streamFailed(let id, let reason, _):
                completion = lock.withLock { waiting.removeValue(forKey: id)?.completion }
                result = .failure(OutboundFailure("\(origin): \(reason)"))
            case .closed:
                continue
            }
            completion?(result)
            onStreamFreed()
        }
    }

    private static func milliseconds(until instant: ContinuousClock.Instant, from now: ContinuousClock.Instant) -> Int32 {
        let left = now.duration(to: instant)
        guard left > .zero else { return 0 }
        let (seconds, attoseconds) = left.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
    }
}

extension HTTP2ClientSession.Event {
    /// The stream the event is about, if one.
    var stream: UInt32? {
        switch self {
        case .response(let stream, _), .streamFailed(let stream, _, _): stream
        case .closed: nil
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
