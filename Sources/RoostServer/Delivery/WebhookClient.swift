import Foundation
import RoostProtocol

#if canImport(Glibc)
import Glibc
#endif

/// A minimal, blocking HTTP/1.1 POST for webhook delivery: plain `http://` (TLS, if needed, is
/// a local proxy's job), a timeout on connect, send and receive, and only the status code read
/// back. Runs on the outbox worker's own thread, never on an event loop.
struct WebhookClient: Sendable {
    let url: URL
    let secret: String?
    let timeoutSeconds: Int

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// POSTs `body`; returns the response status, or throws on any transport failure.
    func post(_ body: [UInt8]) throws -> Int {
        guard url.scheme == "http", let host = url.host else { throw Failure(description: "only http:// webhook URLs are supported") }
        let port = url.port ?? 80
        let path = (url.path.isEmpty ? "/" : url.path) + (url.query.map { "?" + $0 } ?? "")
        var request = "POST \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: application/json\r\n"
        request += "Content-Length: \(body.count)\r\nConnection: close\r\nUser-Agent: roost\r\n"
        if let secret {
            // As for bridges (API.md): HMAC-SHA256 of "timestamp.body".
            let timestamp = String(Int(Date().timeIntervalSince1970))
            let signature = Digest.hex(Secrets.hmacSHA256(key: Array(secret.utf8), message: Array((timestamp + ".").utf8) + body))
            request += "X-Roost-Timestamp: \(timestamp)\r\nX-Roost-Signature: sha256=\(signature)\r\n"
        }
        let bytes = Array((request + "\r\n").utf8) + body
        let fd = try connect(host: host, port: port)
        defer { close(fd) }
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw Failure(description: "sending to \(host):\(port) failed: errno \(errno)") }
            sent += count
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while !response.contains(10), response.count < 8192 {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw Failure(description: "no response from \(host):\(port)") }
            response += buffer[0..<count]
        }
        let statusLine = String(decoding: response.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw Failure(description: "malformed response from \(host):\(port)")
        }
        return status
    }

    private func connect(host: String, port: Int) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else {
            throw Failure(description: "cannot resolve \(host)")
        }
        defer { freeaddrinfo(result) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed: errno \(errno)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // With SO_SNDTIMEO set, a blocking connect(2) on Linux gives up after that timeout too.
        guard Glibc.connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let code = errno
            close(fd)
            throw Failure(description: "cannot connect to \(host):\(port): \(String(cString: strerror(code)))")
        }
        return fd
    }
}
