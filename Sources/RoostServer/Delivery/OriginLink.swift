import Foundation
import RoostProtocol
import Synchronization

/// How a channel makes one HTTP POST: over a connection of its origin's pool (`OriginLink`), or
/// over a connection of its own closed after the answer (`OutboundPost`).
protocol HTTPPoster {
    func post(_ url: OutboundURL, headers: [(String, String)], body: [UInt8]) throws(OutboundFailure) -> HTTPResponseFraming.Response
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

    init(to url: OutboundURL, network: OutboundNetwork, tls: TLSClientContext?, sessions: TLSSessionCache?, timeoutSeconds: Int) throws(OutboundFailure) {
        origin = url.origin
        stream = try OutboundStream(to: url, through: network, deadline: .now + .seconds(timeoutSeconds))
        if url.scheme == "https" {
            guard let tls else { throw OutboundFailure("https:// needs a TLS context") }
            try stream.startTLS(tls, resuming: sessions?.session(for: origin))
        }
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

/// A worker thread's way to its origin: the thread's kept connection, made (or made again) when
/// needed, closed after `idleSeconds` unused. A request that fails on a connection that had
/// already carried one, before any answer came, is sent once more on a new connection: the
/// server closed it while idle, as RFC 9112 §9.3.1 lets it, and never read the request.
final class OriginLink: HTTPPoster {
    private let network: OutboundNetwork
    private let tls: TLSClientContext?
    private let sessions: TLSSessionCache
    private let timeoutSeconds: Int
    private let idleSeconds: Double
    private let counters: OriginCounters
    private var connection: KeptConnection?
    private var session: SMTPSession?
    /// Emails one SMTP session carries before it is ended and another opened.
    static let emailsPerSession = 100

    init(network: OutboundNetwork, tls: TLSClientContext?, sessions: TLSSessionCache, timeoutSeconds: Int, idleSeconds: Double, counters: OriginCounters) {
        self.network = network
        self.tls = tls
        self.sessions = sessions
        self.timeoutSeconds = timeoutSeconds
        self.idleSeconds = idleSeconds
        self.counters = counters
    }

    deinit { drop() }

    func post(_ url: OutboundURL, headers: [(String, String)], body: [UInt8]) throws(OutboundFailure) -> HTTPResponseFraming.Response {
        guard url.scheme == "http" || url.scheme == "https" else { throw OutboundFailure("only http:// and https:// URLs can be posted to, not \(url)") }
        var request = "POST \(url.target) HTTP/1.1\r\nHost: \(url.authority)\r\nContent-Length: \(body.count)\r\nUser-Agent: roost\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        let bytes = Array((request + "\r\n").utf8) + body
        let deadline = ContinuousClock.now + .seconds(timeoutSeconds)
        if let kept = connection, !kept.open || kept.origin != url.origin || kept.lastUsed.duration(to: .now) > .seconds(idleSeconds) {
            drop()
        }
        if let kept = connection {
            do {
                let response = try kept.exchange(bytes, deadline: deadline, sessions: sessions)
                if !kept.open { drop() }
                return response
            } catch {
                drop()
                guard ContinuousClock.now < deadline else { throw error }
                // Sent again below, on a new connection.
            }
        }
        let fresh = try KeptConnection(to: url, network: network, tls: tls, sessions: sessions, timeoutSeconds: timeoutSeconds)
        connection = fresh
        counters.opened(resumed: fresh.resumedTLS)
        defer { if !fresh.open { drop() } }
        return try fresh.exchange(bytes, deadline: deadline, sessions: sessions)
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
