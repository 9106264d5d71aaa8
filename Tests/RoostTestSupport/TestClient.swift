import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP client over a real socket, for driving the server byte by byte.
///
/// `@unchecked Sendable`: a test hands a client to at most one other task at a time (a
/// trickling writer), which only sends while the test only reads.
public final class TestClient: @unchecked Sendable {
    public let fd: Int32
    private var pending: [UInt8] = []
    /// Every byte read from the socket so far.
    public private(set) var bytesRead = 0

    public struct Response: Sendable {
        public let status: Int
        public let headers: [String: String]
        public let body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// `receiveTimeoutSeconds`: how long a read waits for the server. 30 s by default: with every
    /// suite running at once on CI's two cores, a healthy answer has been seen to take over 10 s
    /// (a closed connection still ends a read at once, so tests expecting one pay nothing).
    public init(port: UInt16, receiveBuffer: Int32? = nil, receiveTimeoutSeconds: Int = 30) throws {
        guard let fd = connectToLoopback(port: port, receiveTimeoutSeconds: receiveTimeoutSeconds, receiveBuffer: receiveBuffer) else {
            throw TestClientError("connect to 127.0.0.1:\(port) failed: errno \(errno)")
        }
        self.fd = fd
    }

    deinit { close(fd) }

    public func setTimeout(seconds: Double) {
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    public func send(_ text: String) { send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// How the last read that returned nothing ended ("EOF", "reset", "timeout", an errno), for
    /// a failing test to say what the server did.
    public private(set) var lastReadEnd: String?

    /// Reads up to `max` bytes once; [] on EOF or reset; nil on timeout or error.
    public func readSome(max: Int = 65_536) -> [UInt8]? {
        if !pending.isEmpty {
            defer { pending = [] }
            return pending
        }
        var buffer = [UInt8](repeating: 0, count: max)
        var count: Int
        // A signal caught by any thread of the test process ends a recv on a socket with a
        // receive timeout with EINTR, whatever SA_RESTART says (signal(7)): that is no answer.
        repeat {
            count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        } while count < 0 && errno == EINTR
        if count <= 0 {
            let error = errno
            lastReadEnd = count == 0 ? "EOF" : error == ECONNRESET ? "reset" : error == EAGAIN ? "timeout" : "errno \(error)"
            // A close with unread input arrives as a reset: for the client that is a close too.
            if count < 0 { return error == ECONNRESET ? [] : nil }
        }
        bytesRead += count
        return Array(buffer[0..<count])
    }

    /// Reads one complete HTTP response off the cooperative threads (which the server's
    /// handlers need): tests must never block them.
    public func readResponse() async -> Response? {
        await offload { self.readResponseBlocking() }
    }

    /// Reads a response's head only (the answer to a HEAD request, whose framing headers
    /// announce a body that does not follow).
    public func readResponseHeadOnly() async -> Response? {
        await offload { self.readResponseBlocking(headOnly: true) }
    }

    /// True when the server closes the connection within the receive timeout.
    public func waitForClose() async -> Bool {
        await offload { self.waitForCloseBlocking() }
    }

    /// Reads one complete HTTP response (Content-Length framed, or chunked: the body is the
    /// chunks joined); nil on timeout or EOF, also in the middle of a chunked body.
    public func readResponseBlocking(headOnly: Bool = false) -> Response? {
        var data = pending
        pending = []
        func find(_ needle: [UInt8]) -> Int? {
            guard data.count >= needle.count else { return nil }
            for start in 0...(data.count - needle.count) where data[start..<(start + needle.count)].elementsEqual(needle) { return start }
            return nil
        }
        let separator = Array("\r\n\r\n".utf8)
        var headerEnd = find(separator)
        while headerEnd == nil {
            guard let more = readSome(), !more.isEmpty else { return nil }
            data += more
            headerEnd = find(separator)
        }
        let head = String(decoding: data[0..<headerEnd!], as: UTF8.self).components(separatedBy: "\r\n")
        guard let status = Int(head[0].split(separator: " ")[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let bodyStart = headerEnd! + 4
        if headOnly {
            pending = Array(data[bodyStart...])
            return Response(status: status, headers: headers, body: [])
        }
        if headers["transfer-encoding"]?.lowercased() == "chunked" {
            var position = bodyStart
            var body: [UInt8] = []
            while true {
                // The size line, then that many bytes and CRLF; a size of 0 ends it (no trailers sent).
                var lineEnd: Int?
                while lineEnd == nil {
                    if data.count >= position + 2 {
                        lineEnd = (position..<(data.count - 1)).first { data[$0] == 13 && data[$0 + 1] == 10 }
                    }
                    if lineEnd == nil {
                        guard let more = readSome(), !more.isEmpty else { return nil }
                        data += more
                    }
                }
                guard let size = Int(String(decoding: data[position..<lineEnd!], as: UTF8.self), radix: 16) else { return nil }
                let chunkStart = lineEnd! + 2
                while data.count < chunkStart + size + 2 {
                    guard let more = readSome(), !more.isEmpty else { return nil }
                    data += more
                }
                position = chunkStart + size + 2
                if size == 0 { break }
                body += data[chunkStart..<(chunkStart + size)]
            }
            pending = Array(data[position...])
            return Response(status: status, headers: headers, body: body)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while data.count < bodyStart + length {
            guard let more = readSome(), !more.isEmpty else { return nil }
            data += more
        }
        pending = Array(data[(bodyStart + length)...])
        return Response(status: status, headers: headers, body: Array(data[bodyStart..<(bodyStart + length)]))
    }

    public func waitForCloseBlocking() -> Bool {
        while true {
            guard let bytes = readSome() else { return false }
            if bytes.isEmpty { return true }
        }
    }
}

public struct TestClientError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}


