import Foundation
import RoostHTTP
import RoostProtocol

/// Where and how email leaves (`ROOST_SMTP_URL`, `ROOST_SMTP_FROM`): `smtp://` needs STARTTLS,
/// `smtps://` is TLS from the first byte, `smtp+plain://` is a local relay without TLS.
struct SMTPSettings: Sendable {
    enum Security: Sendable, Equatable { case startTLS, implicitTLS, plain }

    let host: String
    let port: Int
    /// Where the connection goes, as the outbound policy took it (the operator's own host).
    let endpoint: OutboundURL
    let security: Security
    let username: String?
    let password: String?
    let from: MailAddress

    init(url text: String, from fromText: String?) throws {
        guard let parts = URLComponents(string: text), let scheme = parts.scheme, let host = parts.host, !host.isEmpty else {
            throw ConfigurationError("ROOST_SMTP_URL must look like smtp://user:password@host:587, not '\(text)'")
        }
        switch scheme {
        case "smtp": (security, port) = (.startTLS, parts.port ?? 587)
        case "smtps": (security, port) = (.implicitTLS, parts.port ?? 465)
        case "smtp+plain": (security, port) = (.plain, parts.port ?? 25)
        default: throw ConfigurationError("ROOST_SMTP_URL's scheme must be smtp (STARTTLS), smtps (TLS) or smtp+plain (a local relay), not '\(scheme)'")
        }
        self.host = host
        let rawHost = parts.percentEncodedHost ?? host
        let bracketed = rawHost.contains(":") && !rawHost.hasPrefix("[") ? "[\(rawHost)]" : rawHost
        do {
            endpoint = try OutboundPolicy().url("\(scheme)://\(bracketed):\(port)", from: .operator, schemes: ["smtp", "smtps", "smtp+plain"])
        } catch {
            throw ConfigurationError("ROOST_SMTP_URL's host: \(error)")
        }
        username = parts.user
        password = parts.password
        guard let fromText, !fromText.isEmpty else {
            throw ConfigurationError("ROOST_EMAIL=smtp needs ROOST_SMTP_FROM, an address such as 'Roost <noreply@example.org>'")
        }
        guard let from = MailAddress(fromText) else {
            throw ConfigurationError("ROOST_SMTP_FROM '\(fromText)' is not an email address: write it as noreply@example.org or 'Roost <noreply@example.org>'")
        }
        self.from = from
    }
}

/// One SMTP session (RFC 5321) that carries many emails, one after another: opened with EHLO,
/// STARTTLS when required (the server must offer it; the certificate is verified), AUTH PLAIN
/// when a user is configured (only ever over TLS or to the plain local relay the operator
/// chose); then for each email MAIL, RCPT, DATA with the dot-stuffed message, and `RSET` before
/// the next (sent in one write with them when the relay offers PIPELINING, RFC 2920). A 4xx
/// reply is worth another try later, a 5xx is not; either way the server's words come back and
/// the session goes on. Each step ends by the deadline of the email it is for.
final class SMTPSession {
    let settings: SMTPSettings
    private let stream: OutboundStream
    private var reader = SMTPReplyReader()
    private var pending = 0
    /// Replies read so far.
    private var replies = 0
    /// The relay offered PIPELINING.
    private(set) var pipelining = false
    /// Emails this session carried (refused ones too).
    private(set) var transactions = 0
    private(set) var open = true
    private(set) var lastUsed = ContinuousClock.now

    /// The name Roost greets with: the sender's domain.
    private var greeting: String { settings.from.address.split(separator: "@").last.map(String.init) ?? "localhost" }

    /// Connects and greets; a refusal on the way (a 4xx or 5xx, no STARTTLS) is the outcome of
    /// the email that asked for the session, thrown as `Refused`.
    init(settings: SMTPSettings, network: OutboundNetwork, tls: TLSClientContext?, deadline: ContinuousClock.Instant) throws {
        self.settings = settings
        stream = try OutboundStream(to: settings.endpoint, through: network, deadline: deadline)
        do {
            try greet(tls: tls)
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Why a session could not be opened, as the outcome of the email that asked for it.
    struct Refused: Error {
        let outcome: DeliveryOutcome
    }

    private func greet(tls: TLSClientContext?) throws {
        func require(_ outcome: DeliveryOutcome?) throws {
            if let outcome { throw Refused(outcome: outcome) }
        }
        func requireTLS() throws -> TLSClientContext {
            guard let tls else { throw OutboundFailure("SMTP over TLS needs a TLS context") }
            return tls
        }
        if settings.security == .implicitTLS { try stream.startTLS(try requireTLS()) }
        try require(try run([(nil, [220])], shown: "the greeting"))
        var extensions = try command("EHLO \(greeting)")
        guard extensions.code == 250 else { throw Refused(outcome: Self.classify(extensions, during: "EHLO")) }
        if settings.security == .startTLS {
            guard extensions.lines.dropFirst().contains(where: { $0.uppercased().hasPrefix("STARTTLS") }) else {
                throw Refused(outcome: .failed("\(settings.host) does not offer STARTTLS, which smtp:// requires (smtp+plain:// is for a local relay)"))
            }
            try require(try run([("STARTTLS", [220])]))
            // Nothing the server sent before TLS may be read as if it came after (CVE-2011-0411).
            guard pending == 0 else { throw Refused(outcome: .failed("\(settings.host) sent data after agreeing to STARTTLS")) }
            try stream.startTLS(try requireTLS())
            extensions = try command("EHLO \(greeting)")
            guard extensions.code == 250 else { throw Refused(outcome: Self.classify(extensions, during: "EHLO")) }
        }
        pipelining = extensions.lines.dropFirst().contains { $0.uppercased() == "PIPELINING" }
        if let username = settings.username {
            let plain = Data([0] + Array(username.utf8) + [0] + Array((settings.password ?? "").utf8)).base64EncodedString()
            try require(try run([("AUTH PLAIN \(plain)", [235])], shown: "AUTH PLAIN"))
        }
    }

    /// The connection failed before the server answered anything of this email: a kept
    /// session the server had closed while idle. Sending again on a new session is safe.
    struct Stale: Error {
        let underlying: any Error
    }

    /// Sends one email by `deadline`. A reply refusing it is its outcome (the session stays
    /// usable); a failure of the connection throws (and the session is closed): `Stale` when no
    /// reply to this email had come yet.
    func send(_ message: MailMessage, deadline: ContinuousClock.Instant) throws -> DeliveryOutcome {
        precondition(open, "a closed session carries nothing")
        stream.deadline = deadline
        let repliesBefore = replies
        do {
            var steps: [(command: String?, expect: Set<Int>)] = [
                ("MAIL FROM:<\(settings.from.address)>", [250]),
                ("RCPT TO:<\(message.to)>", [250, 251]),
                ("DATA", [354]),
            ]
            // The last transaction may have been refused half-way: start clean.
            if transactions > 0 { steps.insert(("RSET", [250]), at: 0) }
            transactions += 1
            let refused = pipelining ? try pipelined(steps) : try run(steps)
            if let refused { return refused }
            try stream.write(MailMessage.dotStuffed(message.rendered()))
            if let refused = try run([(nil, [250])], shown: "the message") { return refused }
            lastUsed = .now
            return .delivered
        } catch {
            close()
            throw replies == repliesBefore && transactions > 1 ? Stale(underlying: error) : error
        }
    }

    /// Ends the session politely (a QUIT the server may not answer), then closes it.
    func quit() {
        guard open else { return }
        stream.deadline = .now + .seconds(2)
        _ = try? command("QUIT")
        close()
    }

    func close() {
        open = false
        stream.close()
    }

    static func classify(_ reply: SMTPReply, during step: String) -> DeliveryOutcome {
        let text = "\(step): \(reply.summary)"
        return reply.isTransient ? .retry(text) : .failed(text)
    }

    /// Sends every command in one write and then reads their replies in order (RFC 2920): the
    /// first one out of its expected codes is the outcome, once every reply is read.
    private func pipelined(_ steps: [(command: String?, expect: Set<Int>)]) throws -> DeliveryOutcome? {
        try stream.write(Array(steps.compactMap { $0.command.map { $0 + "\r\n" } }.joined().utf8))
        var refused: DeliveryOutcome?
        for step in steps {
            let reply = try read()
            if refused == nil, !step.expect.contains(reply.code) {
                refused = Self.classify(reply, during: step.command.map { String($0.prefix(4)) } ?? "the greeting")
            }
        }
        return refused
    }

    /// Sends each command (nil: none, just read the reply) and stops at the first reply not in
    /// its expected codes, returning what it means.
    private func run(_ steps: [(command: String?, expect: Set<Int>)], shown: String? = nil) throws -> DeliveryOutcome? {
        for step in steps {
            let reply = try step.command.map { try command($0) } ?? read()
            guard step.expect.contains(reply.code) else {
                return Self.classify(reply, during: shown ?? step.command.map { String($0.prefix(4)) } ?? "the greeting")
            }
        }
        return nil
    }

    private func command(_ line: String) throws -> SMTPReply {
        try stream.write(Array((line + "\r\n").utf8))
        return try read()
    }

    private func read() throws -> SMTPReply {
        while true {
            do {
                if let reply = try reader.next() {
                    pending = reader.bufferedCount
                    replies += 1
                    return reply
                }
            } catch {
                throw OutboundFailure("\(error)")
            }
            let bytes = try stream.read(limit: 4096)
            guard !bytes.isEmpty else { throw OutboundFailure("the SMTP server closed the connection") }
            reader.feed(bytes)
        }
    }
}
