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

    public struct Response: Sendable {
        public let status: Int
        public let headers: [String: String]
        public let body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public init(port: UInt16, receiveBuffer: Int32? = nil, receiveTimeoutSeconds: Int = 10) throws {
        guard let fd = connectToLoopback(port: port, receiveTimeoutSeconds: receiveTimeoutSeconds, receiveBuffer: receiveBuffer) else {
            throw TestClientError("connect failed: errno \(errno)")
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

    /// Reads up to `max` bytes once; [] on EOF or reset; nil on timeout or error.
    public func readSome(max: Int = 65_536) -> [UInt8]? {
        if !pending.isEmpty {
            defer { pending = [] }
            return pending
        }
        var buffer = [UInt8](repeating: 0, count: max)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        // A close with unread input arrives as a reset: for the client that is a close too.
        if count < 0 { return errno == ECONNRESET ? [] : nil }
        return Array(buffer[0..<count])
    }

    /// Reads one complete HTTP response off the cooperative threads (which the server's
    /// handlers need): tests must never block them.
    public func readResponse() async -> Response? {
        await offload { self.readResponseBlocking() }
    }

    /// True when the server closes the connection within the receive timeout.
    public func waitForClose() async -> Bool {
        await offload { self.waitForCloseBlocking() }
    }

    /// Reads one complete HTTP response (Content-Length framed); nil on timeout or EOF.
    public func readResponseBlocking() -> Response? {
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
        let length = Int(headers["content-length"] ?? "0") ?? 0
        let bodyStart = headerEnd! + 4
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


