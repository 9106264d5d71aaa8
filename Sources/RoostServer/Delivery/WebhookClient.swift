import Foundation
import RoostProtocol

/// One HTTP/1.1 POST over an `OutboundStream` to a URL the outbound policy made (`http://` or
/// `https://` with a TLS context), `Connection: close`, and the response's status line and
/// headers read back, at most 16 KiB (no caller needs the body, so none is read). A redirect
/// is an answer like any other: it is never followed. The request line carries the URL's
/// target byte for byte as the policy took it. Runs on the outbox worker's own threads, never
/// on an event loop.
struct OutboundPost {
    struct Response {
        let status: Int
        /// Header names lower-cased.
        let headers: [String: String]
    }

    let url: OutboundURL
    let network: OutboundNetwork
    var headers: [(String, String)] = []
    let timeoutSeconds: Int
    let tls: TLSClientContext?

    func send(_ body: [UInt8]) throws(OutboundFailure) -> Response {
        guard url.scheme == "http" || url.scheme == "https" else { throw OutboundFailure("only http:// and https:// URLs can be posted to, not \(url)") }
        var request = "POST \(url.target) HTTP/1.1\r\nHost: \(url.authority)\r\nContent-Length: \(body.count)\r\nConnection: close\r\nUser-Agent: roost\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        let stream = try OutboundStream(to: url, through: network, deadline: .now + .seconds(timeoutSeconds))
        defer { stream.close() }
        if url.scheme == "https" {
            guard let tls else { throw OutboundFailure("https:// needs a TLS context") }
            try stream.startTLS(tls)
        }
        try stream.write(Array((request + "\r\n").utf8) + body)
        var response: [UInt8] = []
        while Self.headerEnd(response) == nil {
            guard response.count < 16_384 else { throw OutboundFailure("the response of \(url.hostText) has headers over 16 KiB") }
            let piece = try stream.read()
            guard !piece.isEmpty else { break }
            response += piece
        }
        return try Self.parse(response, host: url.hostText)
    }

    private static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    private static func parse(_ bytes: [UInt8], host: String) throws(OutboundFailure) -> Response {
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
    let url: OutboundURL
    let network: OutboundNetwork
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
        return try OutboundPost(url: url, network: network, headers: headers, timeoutSeconds: timeoutSeconds, tls: tls).send(body).status
    }
}
