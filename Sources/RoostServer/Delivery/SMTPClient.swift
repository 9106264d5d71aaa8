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
        guard let fromText, let from = MailAddress(fromText) else {
            throw ConfigurationError("ROOST_EMAIL=smtp needs ROOST_SMTP_FROM, an address such as 'Roost <noreply@example.org>'")
        }
        self.from = from
    }
}

/// Sends one email per connection over SMTP (RFC 5321): EHLO, STARTTLS when required (the
/// server must offer it; the certificate is verified), AUTH PLAIN when a user is configured
/// (only ever over TLS or to the plain local relay the operator chose), MAIL, RCPT, DATA with
/// the dot-stuffed message, QUIT. A 4xx reply at any step is worth another try later, a 5xx is
/// not; either way the server's words come back. Every step shares one deadline.
struct SMTPClient {
    let settings: SMTPSettings
    let network: OutboundNetwork
    let tls: TLSClientContext?
    let timeoutSeconds: Int

    /// The name Roost greets with: the sender's domain.
    private var greeting: String { settings.from.address.split(separator: "@").last.map(String.init) ?? "localhost" }

    func send(_ message: MailMessage) throws -> DeliveryOutcome {
        let stream = try OutboundStream(to: settings.endpoint, through: network, deadline: .now + .seconds(timeoutSeconds))
        defer { stream.close() }
        var session = Session(stream: stream)
        if settings.security == .implicitTLS { try stream.startTLS(try requireTLS()) }
        if let refused = try session.run([(nil, [220])]) { return refused }
        var extensions = try session.command("EHLO \(greeting)")
        guard extensions.code == 250 else { return Self.classify(extensions, during: "EHLO") }
        if settings.security == .startTLS {
            guard extensions.lines.dropFirst().contains(where: { $0.uppercased().hasPrefix("STARTTLS") }) else {
                return .failed("\(settings.host) does not offer STARTTLS, which smtp:// requires (smtp+plain:// is for a local relay)")
            }
            if let refused = try session.run([("STARTTLS", [220])]) { return refused }
            // Nothing the server sent before TLS may be read as if it came after (CVE-2011-0411).
            guard session.isDrained else { return .failed("\(settings.host) sent data after agreeing to STARTTLS") }
            try stream.startTLS(try requireTLS())
            extensions = try session.command("EHLO \(greeting)")
            guard extensions.code == 250 else { return Self.classify(extensions, during: "EHLO") }
        }
        if let username = settings.username {
            let plain = Data([0] + Array(username.utf8) + [0] + Array((settings.password ?? "").utf8)).base64EncodedString()
            if let refused = try session.run([("AUTH PLAIN \(plain)", [235])], shown: "AUTH PLAIN") { return refused }
        }
        if let refused = try session.run([
            ("MAIL FROM:<\(settings.from.address)>", [250]),
            ("RCPT TO:<\(message.to)>", [250, 251]),
            ("DATA", [354]),
        ]) { return refused }
        try stream.write(MailMessage.dotStuffed(message.rendered()))
        if let refused = try session.run([(nil, [250])], shown: "the message") { return refused }
        _ = try? session.command("QUIT")
        return .delivered
    }

    private func requireTLS() throws -> TLSClientContext {
        guard let tls else { throw OutboundFailure("SMTP over TLS needs a TLS context") }
        return tls
    }

    static func classify(_ reply: SMTPReply, during step: String) -> DeliveryOutcome {
        let text = "\(step): \(reply.summary)"
        return reply.isTransient ? .retry(text) : .failed(text)
    }

    /// Commands and their replies over one stream.
    private struct Session {
        let stream: OutboundStream
        var reader = SMTPReplyReader()
        var pending = 0

        init(stream: OutboundStream) { self.stream = stream }

        var isDrained: Bool { pending == 0 }

        /// Sends each command (nil: none, just read the reply) and stops at the first reply
        /// not in its expected codes, returning what it means.
        mutating func run(_ steps: [(command: String?, expect: Set<Int>)], shown: String? = nil) throws -> DeliveryOutcome? {
            for step in steps {
                let reply = try step.command.map { try command($0) } ?? read()
                guard step.expect.contains(reply.code) else {
                    return SMTPClient.classify(reply, during: shown ?? step.command.map { String($0.prefix(4)) } ?? "the greeting")
                }
            }
            return nil
        }

        mutating func command(_ line: String) throws -> SMTPReply {
            try stream.write(Array((line + "\r\n").utf8))
            return try read()
        }

        mutating func read() throws -> SMTPReply {
            while true {
                do {
                    if let reply = try reader.next() {
                        pending = reader.bufferedCount
                        return reply
                    }
                } catch {
                    throw OutboundFailure("\(error)")
                }
                let bytes = try stream.read()
                guard !bytes.isEmpty else { throw OutboundFailure("the SMTP server closed the connection") }
                reader.feed(bytes)
            }
        }
    }
}
