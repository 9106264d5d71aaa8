import Foundation

/// Where an HTTP/1.1 response ends in the bytes read so far (RFC 9112 §6.3), so a kept
/// connection can carry the next request: pure, and tested alone (HTTPResponseFramingTests, and fuzzed: Fuzz/HTTPResponseFraming).
///
/// The body is skipped, never kept (no delivery reads it), but it is counted to its end: by
/// `Content-Length`, by chunks, or, with neither, by the end of the connection, which then
/// cannot be kept. Interim 1xx responses are passed over. A response is at most `limit` bytes.
public struct HTTPResponseFraming: Sendable {
    public struct Response: Equatable, Sendable {
        public let status: Int
        /// Header names lower-cased; a repeated header keeps its last value.
        public let headers: [String: String]

        public init(status: Int, headers: [String: String]) {
            self.status = status
            self.headers = headers
        }
    }

    public enum Step: Equatable, Sendable {
        /// More bytes are needed (`atEnd`: the peer closed, so none will come: a malformed end).
        case needMore
        /// A whole response in the first `consumed` bytes; `keepAlive`: the connection may carry
        /// another request.
        case complete(Response, consumed: Int, keepAlive: Bool)
        case malformed(String)
    }

    public var limit = 1 << 20

    public init() {}

    /// What `bytes` (everything read since the request was sent) hold; `closed`: the peer ended
    /// the connection after them.
    public func step(_ bytes: [UInt8], closed: Bool) -> Step {
        var start = 0
        while true {
            guard let end = Self.headerEnd(bytes, from: start) else {
                if bytes.count - start > 16_384 { return .malformed("response headers over 16 KiB") }
                return closed ? .malformed(bytes.count == start ? "no response" : "the response ended inside its headers") : .needMore
            }
            guard let (status, headers) = Self.head(bytes[start..<end]) else { return .malformed("malformed response head") }
            let bodyStart = end + 4
            if (100...199).contains(status) {
                // An interim response: what follows is the real one.
                start = bodyStart
                continue
            }
            let keepAlive = !(headers["connection"]?.lowercased().contains("close") ?? false)
            if status == 204 || status == 304 {
                return .complete(Response(status: status, headers: headers), consumed: bodyStart, keepAlive: keepAlive)
            }
            if let coding = headers["transfer-encoding"] {
                guard coding.lowercased().hasSuffix("chunked") else { return .malformed("transfer coding \(coding) is not supported") }
                switch Self.chunkedEnd(bytes, from: bodyStart) {
                case .some(.success(let consumed)):
                    return .complete(Response(status: status, headers: headers), consumed: consumed, keepAlive: keepAlive)
                case .some(.failure(let problem)): return .malformed(problem.text)
                case .none:
                    if bytes.count > limit { return .malformed("response over \(limit) bytes") }
                    return closed ? .malformed("the response ended inside its chunked body") : .needMore
                }
            }
            if let text = headers["content-length"] {
                guard !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }), let length = Int(text) else {
                    return .malformed("bad Content-Length \(text)")
                }
                guard length <= limit else { return .malformed("a body of \(length) bytes, over \(limit)") }
                if bytes.count >= bodyStart + length {
                    return .complete(Response(status: status, headers: headers), consumed: bodyStart + length, keepAlive: keepAlive)
                }
                return closed ? .malformed("the response ended inside its body") : .needMore
            }
            // Neither: the body runs to the end of the connection.
            if bytes.count > limit { return .malformed("response over \(limit) bytes") }
            return closed ? .complete(Response(status: status, headers: headers), consumed: bytes.count, keepAlive: false) : .needMore
        }
    }

    /// The body of the response `step` found complete in `bytes[..<consumed]`, de-chunked: for
    /// the rare client that reads it (a feed poll). Interim responses are passed over as `step`
    /// does; nil for bytes `step` did not call complete.
    public static func body(_ bytes: [UInt8], consumed: Int) -> [UInt8]? {
        var start = 0
        while let end = headerEnd(bytes, from: start), let (status, headers) = head(bytes[start..<end]) {
            let bodyStart = end + 4
            if (100...199).contains(status) {
                start = bodyStart
                continue
            }
            if status == 204 || status == 304 { return [] }
            guard consumed >= bodyStart, consumed <= bytes.count else { return nil }
            guard headers["transfer-encoding"] != nil else { return Array(bytes[bodyStart..<consumed]) }
            var body: [UInt8] = []
            var index = bodyStart
            while let lineEnd = lineEnd(bytes, from: index) {
                let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";", maxSplits: 1).first ?? ""
                guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0,
                      lineEnd + 2 + size <= consumed else { return nil }
                if size == 0 { return body }
                body += bytes[(lineEnd + 2)..<(lineEnd + 2 + size)]
                index = lineEnd + 2 + size + 2
            }
            return nil
        }
        return nil
    }

    private static func headerEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count - start >= 4 else { return nil }
        var index = start
        while index <= bytes.count - 4 {
            if bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 { return index }
            index += 1
        }
        return nil
    }

    /// The status and headers of a response head (without its final CRLF CRLF), read byte by
    /// byte: this runs once a push.
    private static func head(_ bytes: ArraySlice<UInt8>) -> (Int, [String: String])? {
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == 13, index + 1 < bytes.endIndex, bytes[index + 1] == 10 {
                lines.append(bytes[start..<index])
                index += 2
                start = index
            } else {
                index += 1
            }
        }
        lines.append(bytes[start..<bytes.endIndex])
        // "HTTP/1.x NNN reason"
        let status = lines[0]
        guard status.count >= 12, status.starts(with: Self.http1), status[status.startIndex + 8] == 32,
              status.count == 12 || status[status.startIndex + 12] == 32 else { return nil }
        let minor = status[status.startIndex + 7]
        guard minor == UInt8(ascii: "0") || minor == UInt8(ascii: "1") else { return nil }
        var code = 0
        for digit in status[(status.startIndex + 9)..<(status.startIndex + 12)] {
            guard (48...57).contains(digit) else { return nil }
            code = code * 10 + Int(digit - 48)
        }
        guard (100...599).contains(code) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            let name = String(decoding: line[line.startIndex..<colon].map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
            var value = line[(colon + 1)...]
            while let first = value.first, first == 32 || first == 9 { value = value.dropFirst() }
            while let last = value.last, last == 32 || last == 9 { value = value.dropLast() }
            headers[name] = String(decoding: value, as: UTF8.self)
        }
        // HTTP/1.0 keeps a connection only when it says so.
        if minor == UInt8(ascii: "0"), headers["connection"]?.lowercased() != "keep-alive" { headers["connection"] = "close" }
        return (code, headers)
    }

    private static let http1: [UInt8] = Array("HTTP/1.".utf8)

    struct Problem: Error { let text: String }

    /// The end of a chunked body starting at `start` (its trailers included), nil when more bytes
    /// are needed.
    private static func chunkedEnd(_ bytes: [UInt8], from start: Int) -> Result<Int, Problem>? {
        var index = start
        while true {
            guard let lineEnd = lineEnd(bytes, from: index) else { return nil }
            let line = String(decoding: bytes[index..<lineEnd], as: UTF8.self)
            let sizeText = line.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            // Hex digits only: `Int(_:radix:)` would also take a sign, and a negative size would
            // index before the chunk.
            guard !sizeText.isEmpty, sizeText.utf8.count <= 8, sizeText.utf8.allSatisfy({ $0.isHexDigit }),
                  let size = Int(sizeText, radix: 16) else {
                return .failure(Problem(text: "bad chunk size \(line.prefix(20))"))
            }
            index = lineEnd + 2
            if size == 0 {
                // Trailer lines, then the empty line.
                while true {
                    guard let trailerEnd = Self.lineEnd(bytes, from: index) else { return nil }
                    let empty = trailerEnd == index
                    index = trailerEnd + 2
                    if empty { return .success(index) }
                }
            }
            guard bytes.count >= index + size + 2 else { return nil }
            guard bytes[index + size] == 13, bytes[index + size + 1] == 10 else { return .failure(Problem(text: "a chunk does not end in CRLF")) }
            index += size + 2
        }
    }

    private static func lineEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while index + 1 < bytes.count {
            if bytes[index] == 13 && bytes[index + 1] == 10 { return index }
            index += 1
        }
        return nil
    }
}

private extension UInt8 {
    var isHexDigit: Bool { (48...57).contains(self) || (65...70).contains(self) || (97...102).contains(self) }
}
