import Foundation
import RoostProtocol
import Synchronization

/// What an HTTP request came to: the response, or why there is none.
typealias HTTPAnswer = @Sendable (Result<HTTPResponseFraming.Response, OutboundFailure>) -> Void

/// How a channel makes one HTTP POST: over a connection of its origin's pool (`OriginLink`).
/// `then` hears the answer exactly once: at once on this thread over HTTP/1.1, later on the
/// connection's own thread over HTTP/2.
protocol HTTPPoster {
    func post(_ url: OutboundURL, headers: [(String, String)], body: [UInt8], then: @escaping HTTPAnswer)
}

/// The TLS sessions of the origins delivered to, newest per origin, so a new connection resumes
/// rather than repeating the whole handshake (the server may decline; certificates are checked
/// either way). Shared by every connection of a worker.
final class TLSSessionCache: Sendable {
    private let sessions = Mutex<[String: TLSSession]>([:])

    func session(for origin: String) -> TLSSession? { sessions.withLock { $0[origin] } }

    func keep(_ session: TLSSession, for origin: String) { sessions.withLock { $0[origin] = session } }
}

/// One kept HTTP/1.1 connection to one origin: requests one after another (never pipelined),
/// each response read to its end so the next can follow, until either side says `close`, an
/// error, or `idleSeconds` without use. Used by one thread at a time (its `OriginQueue` worker).
final class KeptConnection {
    let origin: String
    private let stream: OutboundStream
    private(set) var open = true
    private(set) var lastUsed = ContinuousClock.now
    /// Requests this connection carried.
    private(set) var requests = 0

    /// Takes over a connected stream (TLS already started for https).
    init(_ stream: OutboundStream, origin: String) {
        self.origin = origin
        self.stream = stream
    }

    deinit { stream.close() }

    var resumedTLS: Bool { stream.resumedSession }

    /// Sends one request and reads its whole response by `deadline`. A failure closes the
    /// connection; so does a response that does not let it be kept.
    func exchange(_ request: [UInt8], deadline: ContinuousClock.Instant, sessions: TLSSessionCache?) throws(OutboundFailure) -> HTTPResponseFraming.Response {
        precondition(open, "a closed connection carries nothing")
        stream.deadline = deadline
        requests += 1
        do throws(OutboundFailure) {
            try stream.write(request)
            var received: [UInt8] = []
            let framing = HTTPResponseFraming()
            while true {
                let piece = try stream.read(limit: 4096)
                received += piece
                switch framing.step(received, closed: piece.isEmpty) {
                case .needMore: continue
                case .malformed(let problem):
                    close()
                    throw OutboundFailure("\(origin): \(problem)")
                case .complete(let response, let consumed, let keepAlive):
                    // Bytes past the response answer nothing that was asked: the connection is spent.
                    if !keepAlive || consumed != received.count { close() }
                    lastUsed = .now
                    if requests == 1, stream.isTLS, let session = stream.tlsSession() { sessions?.keep(session, for: origin) }
                    return response
                }
            }
        } catch {
            close()
            throw error
        }
    }

    func close() {
        open = false
        stream.close()
    }
}

/// A worker thread's way to its origin: the thread's kept HTTP/1.1 connection, made (or made
/// again) when needed, closed after `idleSeconds` unused; or, once the origin settled on HTTP/2
/// through ALPN, the origin's shared HTTP/2 connections (`HTTP2Pool`), where the request is
/// handed over and the thread goes on. A request that fails on a kept HTTP/1.1 connection that
/// had already carried one, before any answer came, is sent once more on a new connection: the
/// server closed it while idle, as RFC 9112 §9.3.1 lets it, and never read the request.
final class OriginLink: HTTPPoster {
    private let network: OutboundNetwork
    private let tls: TLSClientContext?
    private let sessions: TLSSessionCache
    private let http2: HTTP2Pools?
    private let timeoutSeconds: Int
    private let idleSeconds: Double
    private let counters: OriginCounters
    private var connection: KeptConnection?
    private var session: SMTPSession?
    /// Emails one SMTP session carries before it is ended and another opened.
    static let emailsPerSession = 100

    init(network: OutboundNetwork, tls: TLSClientContext?, sessions: TLSSessionCache, http2: HTTP2Pools?, timeoutSeconds: Int,
         idleSeconds: Double, counters: OriginCounters) {
        self.network = network
        self.tls = tls
        self.sessions = sessions
        self.http2 = http2
        self.timeoutSeconds = timeoutSeconds
        self.idleSeconds = idleSeconds
        self.counters = counters
    }

    deinit { drop() }

    func post(_ url: OutboundURL, headers: [(String, String)], body: [UInt8], then: @escaping HTTPAnswer) {
        do {
            try send(url, headers: headers, body: body, then: then)
        } catch {
            then(.failure(error))
        }
    }

    /// Sends the request one way or another; throws only before `then` was handed it.
    private func send(_ url: OutboundURL, headers: [(String, String)], body: [UInt8], then: @escaping HTTPAnswer) throws(OutboundFailure) {
        guard url.scheme == "http" || url.scheme == "https" else { throw OutboundFailure("only http:// and https:// URLs can be posted to, not \(url)") }
        let deadline = ContinuousClock.now + .seconds(timeoutSeconds)
        let pool = url.scheme == "https" ? http2?.pool(for: url.origin, counters: counters) : nil
        // Until the origin's first connection settles it, every request goes the HTTP/2 way: one
        // thread opens that connection while the others wait for it (or for HTTP/1.1 to be known).
        if let pool, pool.speaksHTTP2 != false, try sendHTTP2(url, headers: headers, body: body, pool: pool, deadline: deadline, then: then) {
            return
        }
        let bytes = Self.http11(url, headers: headers, body: body)
        if let kept = connection, !kept.open || kept.origin != url.origin || kept.lastUsed.duration(to: .now) > .seconds(idleSeconds) {
            drop()
        }
        if let kept = connection {
            do {
                let response = try kept.exchange(bytes, deadline: deadline, sessions: sessions)
                if !kept.open { drop() }
                then(.success(response))
                return
            } catch {
                drop()
                guard ContinuousClock.now < deadline else { throw error }
                // Sent again below, on a new connection.
            }
        }
        let stream = try open(url, offeringHTTP2: pool != nil, deadline: deadline)
        if let pool, stream.negotiatedProtocol == "h2" {
            // The origin speaks HTTP/2: from now on its requests share its pool's connections.
            pool.adopt(try HTTP2Connection(stream: stream, origin: url.origin, idleSeconds: idleSeconds,
                                           onStreamFreed: { pool.streamFreed() }, onClosed: { pool.closed($0) }))
            if try sendHTTP2(url, headers: headers, body: body, pool: pool, deadline: deadline, then: then) { return }
            throw OutboundFailure("\(url.origin) went back to HTTP/1.1 while a request was on its way")
        }
        then(.success(try exchange(bytes, on: stream, origin: url.origin, deadline: deadline)))
    }

    /// The request as HTTP/1.1 sends it.
    private static func http11(_ url: OutboundURL, headers: [(String, String)], body: [UInt8]) -> [UInt8] {
        var request = "POST \(url.target) HTTP/1.1\r\nHost: \(url.authority)\r\nContent-Length: \(body.count)\r\nUser-Agent: roost\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        return Array((request + "\r\n").utf8) + body
    }

    /// A new connection to the origin of `url`, with TLS for https (resuming the origin's last
    /// session when it can, and offering HTTP/2 by ALPN when asked).
    private func open(_ url: OutboundURL, offeringHTTP2: Bool, deadline: ContinuousClock.Instant) throws(OutboundFailure) -> OutboundStream {
        let stream = try OutboundStream(to: url, through: network, deadline: deadline)
        if url.scheme == "https" {
            guard let tls else { throw OutboundFailure("https:// needs a TLS context") }
            try stream.startTLS(tls, resuming: sessions.session(for: url.origin), protocols: offeringHTTP2 ? ["h2", "http/1.1"] : [])
        }
        return stream
    }

    /// The first request on a new HTTP/1.1 connection, which becomes the thread's kept one.
    private func exchange(_ bytes: [UInt8], on stream: OutboundStream, origin: String, deadline: ContinuousClock.Instant) throws(OutboundFailure) -> HTTPResponseFraming.Response {
        let fresh = KeptConnection(stream, origin: origin)
        connection = fresh
        counters.opened(resumed: fresh.resumedTLS)
        defer { if !fresh.open { drop() } }
        return try fresh.exchange(bytes, deadline: deadline, sessions: sessions)
    }

    /// Hands the request to one of the origin's HTTP/2 connections (opening one when all are
    /// full and there is room for another); waits only while every stream of every allowed
    /// connection is in use. False, with nothing sent, when the origin speaks HTTP/1.1 only.
    private func sendHTTP2(_ url: OutboundURL, headers: [(String, String)], body: [UInt8], pool: HTTP2Pool, deadline: ContinuousClock.Instant,
                           then: @escaping HTTPAnswer) throws(OutboundFailure) -> Bool {
        var fields: [(name: String, value: String)] = [(":method", "POST"), (":scheme", "https"), (":authority", url.authority), (":path", url.target),
                                                       ("content-length", String(body.count)), ("user-agent", "roost")]
        for (name, value) in headers { fields.append((name.lowercased(), value)) }
        while true {
            switch try pool.reserve(by: deadline) {
            case .http11:
                return false
            case .connection(let connection):
                if connection.submit(fields, body: body, deadline: deadline, completion: then) { return true }
            case .open:
                var made: HTTP2Connection?
                var speaksHTTP2: Bool?
                defer { pool.opened(made, speaksHTTP2: speaksHTTP2) }
                let stream = try open(url, offeringHTTP2: true, deadline: deadline)
                guard stream.negotiatedProtocol == "h2" else {
                    // The origin went back to HTTP/1.1: this thread keeps the connection for it.
                    speaksHTTP2 = false
                    then(.success(try exchange(Self.http11(url, headers: headers, body: body), on: stream, origin: url.origin, deadline: deadline)))
                    return true
                }
                speaksHTTP2 = true
                made = try HTTP2Connection(stream: stream, origin: url.origin, idleSeconds: idleSeconds,
                                           onStreamFreed: { pool.streamFreed() }, onClosed: { pool.closed($0) })
            }
        }
    }

    /// Sends one email over the thread's SMTP session to the relay, opened (or opened again)
    /// when needed: a session carries `emailsPerSession` emails, then ends with QUIT.
    func mail(_ message: MailMessage, settings: SMTPSettings) throws -> DeliveryOutcome {
        let deadline = ContinuousClock.now + .seconds(timeoutSeconds)
        if let kept = session, !kept.open || kept.transactions >= Self.emailsPerSession || kept.lastUsed.duration(to: .now) > .seconds(idleSeconds) {
            drop()
        }
        if let kept = session {
            do {
                return try kept.send(message, deadline: deadline)
            } catch is SMTPSession.Stale {
                drop()
                // Sent again below, on a new session.
            } catch {
                drop()
                throw error
            }
        }
        let fresh: SMTPSession
        do {
            fresh = try SMTPSession(settings: settings, network: network, tls: tls, deadline: deadline)
        } catch let refused as SMTPSession.Refused {
            return refused.outcome
        }
        session = fresh
        counters.opened(resumed: false)
        do {
            return try fresh.send(message, deadline: deadline)
        } catch {
            drop()
            throw error
        }
    }

    /// Closes the kept connection or session, if any.
    func drop() {
        if let kept = connection {
            connection = nil
            kept.close()
            counters.closed()
        }
        if let kept = session {
            session = nil
            kept.quit()
            counters.closed()
        }
    }
}

/// Connections of one origin, for the metrics: open now, opened in all, and how many of those
/// resumed a TLS session.
final class OriginCounters: Sendable {
    let origin: String
    let openNow = Atomic<Int>(0)
    let openedTotal = Atomic<Int>(0)
    let resumedTotal = Atomic<Int>(0)

    init(origin: String) { self.origin = origin }

    func opened(resumed: Bool) {
        openNow.add(1, ordering: .relaxed)
        openedTotal.add(1, ordering: .relaxed)
        if resumed { resumedTotal.add(1, ordering: .relaxed) }
    }

    func closed() { openNow.subtract(1, ordering: .relaxed) }
}
