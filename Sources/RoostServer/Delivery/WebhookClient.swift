import Foundation
import RoostProtocol

/// One HTTP/1.1 POST over an `OutboundStream`, `http://` or `https://` (with a TLS context),
/// `Connection: close`, and the response's status line and headers read back (the body is not
/// needed by any caller). Runs on the outbox worker's own threads, never on an event loop.
struct OutboundPost {
    struct Response {
        let status: Int
        /// Header names lower-cased.
        let headers: [String: String]
    }

    let url: URL
    var headers: [(String, String)] = []
    let timeoutSeconds: Int
    let tls: TLSClientContext?

    func send(_ body: [UInt8]) throws -> Response {
        guard let scheme = url.scheme, scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else {
            throw OutboundFailure("only http:// and https:// URLs can be posted to, not \(url.absoluteString)")
        }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        let path = (url.path.isEmpty ? "/" : url.path) + (url.query.map { "?" + $0 } ?? "")
        let hostHeader = (url.port == nil ? host : "\(host):\(port)")
        var request = "POST \(path) HTTP/1.1\r\nHost: \(hostHeader)\r\nContent-Length: \(body.count)\r\nConnection: close\r\nUser-Agent: roost\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        let stream = try OutboundStream(host: host, port: port, deadline: .now + .seconds(timeoutSeconds))
        defer { stream.close() }
        if scheme == "https" {
            guard let tls else { throw OutboundFailure("https:// needs a TLS context") }
            try stream.startTLS(tls)
        }
        try stream.write(Array((request + "\r\n").utf8) + body)
        var response: [UInt8] = []
        while Self.headerEnd(response) == nil {
            guard response.count < 16_384 else { throw OutboundFailure("the response of \(host) has headers over 16 KiB") }
            let piece = try stream.read()
            guard !piece.isEmpty else { break }
            response += piece
        }
        return try Self.parse(response, host: host)
    }

    private static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    private static func parse(_ bytes: [UInt8], host: String) throws -> Response {
        let text = String(decoding: bytes[0..<(headerEnd(bytes) ?? bytes.count)], as: UTF8.self)
        let lines = text.components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]), (100...599).contains(status) else {
            throw OutboundFailure(bytes.isEmpty ? "no response from \(host)" : "malformed response from \(host)")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Response(status: status, headers: headers)
    }
}

/// The delivery webhook (API.md "Outbound delivery"): the outbox row as JSON, signed like
/// bridge requests when a secret is set; any 2xx is delivered.
struct WebhookClient: Sendable {
    let url: URL
    let secret: String?
    let timeoutSeconds: Int
    let tls: TLSClientContext?

    /// POSTs `body`; returns the response status, or throws on any transport failure.
    func post(_ body: [UInt8]) throws -> Int {
        var headers = [("Content-Type", "application/json")]
        if let secret {
            // As for bridges (API.md): HMAC-SHA256 of "timestamp.body".
            let timestamp = String(Int(Date().timeIntervalSince1970))
            let signature = Digest.hex(Secrets.hmacSHA256(key: Array(secret.utf8), message: Array((timestamp + ".").utf8) + body))
            headers += [("X-Roost-Timestamp", timestamp), ("X-Roost-Signature", "sha256=\(signature)")]
        }
        return try OutboundPost(url: url, headers: headers, timeoutSeconds: timeoutSeconds, tls: tls).send(body).status
    }
}
