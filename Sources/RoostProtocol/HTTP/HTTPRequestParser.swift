#if canImport(Glibc)
import Glibc
#endif

/// An incremental HTTP/1.1 request parser (RFC 9112), server side.
///
/// Push-style: `feed(_:)` bytes as they arrive, then call `next()` until it returns
/// `.needMore`. Byte-at-a-time feeding gives the same requests as feeding everything at once,
/// and pipelined requests come out in order. Every limit is checked at the earliest byte that
/// reveals the breach. After an error the parser stays failed: the connection must close.
public struct HTTPRequestParser: Sendable {
    public struct Limits: Sendable {
        /// Request line, CRLF excluded: 414 beyond.
        public var maxRequestLineBytes = 8 * 1024
        /// Header section (and chunked trailers), CRLFs included: 431 beyond.
        public var maxHeaderBytes = 16 * 1024
        /// Decoded body: 413 beyond. `bodyLimit` may choose per request (per route).
        public var maxBodyBytes = 64 * 1024
        public var bodyLimit: (@Sendable (HTTPRequestHead) -> Int)?
        /// Requests whose body is handed on in pieces as it arrives (`streamStart`, `bodyPart`,
        /// `bodyEnd`) instead of whole in `request`: uploads, never held in memory whole.
        public var streamsBody: (@Sendable (HTTPRequestHead) -> Bool)?
        public init() {}
    }

    public enum Next: Sendable, Equatable {
        case request(HTTPRequest)
        case needMore
        case failure(HTTPParseError)
        /// A request whose body streams (`Limits.streamsBody`): its head, with an empty body.
        case streamStart(HTTPRequest)
        /// The next piece of the streaming body (never empty).
        case bodyPart([UInt8])
        /// The streaming body is complete; the next request may follow.
        case bodyEnd
    }

    /// The states carry only numbers: the head being built lives in `progress` and `head`,
    /// outside the enum, so appending a header never copies the ones before it.
    private enum State: Sendable {
        case requestLine
        case headers
        case body(remaining: Int)
        case chunkSize(limit: Int)
        case chunkData(limit: Int, remaining: Int)
        case chunkDataEnd(limit: Int)
        case trailers(bytes: Int)
        /// A streaming body is complete: `bodyEnd` is next.
        case streamEnd
        case failed(HTTPParseError)
    }

    private struct HeadInProgress: Sendable {
        var method: HTTPMethod
        var target: HTTPRequestTarget
        var version: HTTPVersion
        var headers = HTTPHeaders()
        var bytes = 0
    }

    public let limits: Limits
    private var state = State.requestLine
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Where the search for the next LF resumes, so a line trickled in is scanned once.
    private var scanIndex = 0
    private var body: [UInt8] = []
    private var progress: HeadInProgress?
    private var head: HTTPRequestHead?
    /// The current request's body streams; `streamed` counts its bytes against the limit.
    private var streaming = false
    private var streamed = 0

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Bytes buffered but not yet consumed by a complete request.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// True when no request is partly received (a connection may be closed for idleness).
    public var isIdle: Bool {
        if case .requestLine = state { return bufferedByteCount == 0 }
        return false
    }

    /// Frees the input buffer when nothing is pending, so an idle keep-alive connection holds
    /// no read memory (the next request allocates afresh).
    public mutating func releaseIdleBuffers() {
        guard isIdle else { return }
        buffer = []
        readIndex = 0
        scanIndex = 0
    }

    public mutating func feed<Bytes: Collection<UInt8>>(_ bytes: Bytes) {
        if case .failed = state { return }
        if readIndex > 0 && readIndex >= buffer.count / 2 {
            buffer.removeSubrange(0..<readIndex)
            scanIndex -= readIndex
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Takes whatever follows the current request out of the parser (after a WebSocket upgrade
    /// the bytes after the handshake belong to the frame decoder).
    public mutating func takeRemainingBytes() -> [UInt8] {
        defer {
            buffer.removeAll(keepingCapacity: false)
            readIndex = 0
            scanIndex = 0
        }
        return Array(buffer[readIndex...])
    }

    public mutating func next() -> Next {
        do throws(HTTPParseError) {
            while true {
                switch state {
                case .failed(let error):
                    return .failure(error)
                case .requestLine:
                    guard let line = try nextLine(limit: limits.maxRequestLineBytes, overLimit: .requestLineTooLong) else {
                        return .needMore
                    }
                    // RFC 9112 §2.2: ignore empty lines before a request line.
                    if line.isEmpty { continue }
                    progress = try Self.parseRequestLine(line)
                    state = .headers
                case .headers:
                    let allowance = limits.maxHeaderBytes - progress!.bytes
                    guard let line = try nextLine(limit: allowance - 2, overLimit: .headersTooLarge) else {
                        return .needMore
                    }
                    progress!.bytes += line.count + 2
                    if line.isEmpty {
                        switch try finishHead() {
                        case .complete(let request): return .request(request)
                        case .stream(let request): return .streamStart(request)
                        case .body: continue
                        }
                    } else {
                        try Self.parseHeaderLine(line, into: &progress!.headers)
                    }
                case .body(let remaining):
                    let available = min(remaining, buffer.count - readIndex)
                    if streaming {
                        guard available > 0 else { return .needMore }
                        let part = Array(buffer[readIndex..<(readIndex + available)])
                        readIndex += available
                        scanIndex = readIndex
                        state = available == remaining ? .streamEnd : .body(remaining: remaining - available)
                        return .bodyPart(part)
                    }
                    body.append(contentsOf: buffer[readIndex..<(readIndex + available)])
                    readIndex += available
                    scanIndex = readIndex
                    guard available == remaining else {
                        state = .body(remaining: remaining - available)
                        return .needMore
                    }
                    return .request(complete())
                case .chunkSize(let limit):
                    guard let line = try nextLine(limit: 1024, overLimit: .malformedChunk) else { return .needMore }
                    let size = try Self.parseChunkSize(line)
                    if size == 0 {
                        state = .trailers(bytes: 0)
                    } else {
                        guard size <= limit - (streaming ? streamed : body.count) else {
                            throw HTTPParseError(.bodyTooLarge, "the request body is larger than \(limit) bytes")
                        }
                        streamed += size
                        state = .chunkData(limit: limit, remaining: size)
                    }
                case .chunkData(let limit, let remaining):
                    let available = min(remaining, buffer.count - readIndex)
                    if streaming {
                        guard available > 0 else { return .needMore }
                        let part = Array(buffer[readIndex..<(readIndex + available)])
                        readIndex += available
                        scanIndex = readIndex
                        state = available == remaining ? .chunkDataEnd(limit: limit) : .chunkData(limit: limit, remaining: remaining - available)
                        return .bodyPart(part)
                    }
                    body.append(contentsOf: buffer[readIndex..<(readIndex + available)])
                    readIndex += available
                    scanIndex = readIndex
                    guard available == remaining else {
                        state = .chunkData(limit: limit, remaining: remaining - available)
                        return .needMore
                    }
                    state = .chunkDataEnd(limit: limit)
                case .chunkDataEnd(let limit):
                    guard buffer.count - readIndex >= 2 else { return .needMore }
                    guard buffer[readIndex] == ASCII.cr, buffer[readIndex + 1] == ASCII.lf else {
                        throw HTTPParseError(.malformedChunk, "a chunk's data is not followed by CRLF")
                    }
                    readIndex += 2
                    scanIndex = readIndex
                    state = .chunkSize(limit: limit)
                case .trailers(let bytes):
                    // Trailer fields are read for framing and dropped (never merged into headers).
                    guard let line = try nextLine(limit: limits.maxHeaderBytes - bytes - 2, overLimit: .headersTooLarge) else {
                        return .needMore
                    }
                    if line.isEmpty {
                        if streaming {
                            state = .streamEnd
                            continue
                        }
                        return .request(complete())
                    }
                    var ignored = HTTPHeaders()
                    try Self.parseHeaderLine(line, into: &ignored)
                    state = .trailers(bytes: bytes + line.count + 2)
                case .streamEnd:
                    state = .requestLine
                    streaming = false
                    streamed = 0
                    head = nil
                    return .bodyEnd
                }
            }
        } catch {
            state = .failed(error)
            return .failure(error)
        }
    }

    // MARK: - Lines

    /// The next CRLF-terminated line without its CRLF, or nil if it has not all arrived.
    /// Fails as soon as more than `limit` bytes have arrived without a line end.
    private mutating func nextLine(limit: Int, overLimit: HTTPParseError.Reason) throws(HTTPParseError) -> ArraySlice<UInt8>? {
        // No room left even for CRLF: the section is over its limit whatever comes next.
        guard limit >= 0 else { throw limitError(overLimit, limit) }
        let start = max(scanIndex, readIndex)
        // Look no further than the byte that would prove the line too long.
        let end = min(buffer.count, readIndex + limit + 2)
        let found: Int? = buffer.withUnsafeBufferPointer { bytes in
            guard start < end, let base = bytes.baseAddress,
                  let hit = memchr(base + start, Int32(ASCII.lf), end - start) else { return nil }
            return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
        }
        guard let index = found else {
            if end - readIndex >= limit + 2 { throw limitError(overLimit, limit) }
            scanIndex = end
            return nil
        }
        guard index > readIndex, buffer[index - 1] == ASCII.cr else {
            throw HTTPParseError(.bareLineFeed, "lines must end with CRLF")
        }
        guard index - 1 - readIndex <= limit else { throw limitError(overLimit, limit) }
        let line = buffer[readIndex..<(index - 1)]
        readIndex = index + 1
        scanIndex = readIndex
        return line
    }

    private func limitError(_ reason: HTTPParseError.Reason, _ limit: Int) -> HTTPParseError {
        switch reason {
        case .requestLineTooLong: return HTTPParseError(reason, "the request line is longer than \(limits.maxRequestLineBytes) bytes")
        case .headersTooLarge: return HTTPParseError(reason, "the header section is larger than \(limits.maxHeaderBytes) bytes")
        default: return HTTPParseError(reason, "a chunk size line is too long")
        }
    }

    // MARK: - Request line and headers

    private static func parseRequestLine(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> HeadInProgress {
        guard let firstSpace = line.firstIndex(of: ASCII.space),
              let secondSpace = line[(firstSpace + 1)...].firstIndex(of: ASCII.space),
              firstSpace > line.startIndex, secondSpace > firstSpace + 1,
              !line[(secondSpace + 1)...].contains(ASCII.space) else {
            throw HTTPParseError(.malformedRequestLine, "the request line is not METHOD TARGET VERSION")
        }
        let method = line[line.startIndex..<firstSpace]
        guard method.allSatisfy(ASCII.isToken) else {
            throw HTTPParseError(.invalidMethod, "the method is not a token")
        }
        let version = try parseVersion(line[(secondSpace + 1)...])
        let target = try HTTPRequestTarget.parse(line[(firstSpace + 1)..<secondSpace])
        var headers = HTTPHeaders()
        headers.reserveCapacity(12)
        return HeadInProgress(
            method: HTTPMethod(String(decoding: method, as: UTF8.self)), target: target, version: version, headers: headers)
    }

    private static func parseVersion(_ text: ArraySlice<UInt8>) throws(HTTPParseError) -> HTTPVersion {
        let start = text.startIndex
        guard text.count == 8, text[start] == UInt8(ascii: "H"), text[start + 1] == UInt8(ascii: "T"),
              text[start + 2] == UInt8(ascii: "T"), text[start + 3] == UInt8(ascii: "P"), text[start + 4] == UInt8(ascii: "/"),
              text[start + 6] == UInt8(ascii: "."),
              let major = ASCII.hexValue(text[start + 5]), major < 10, let minor = ASCII.hexValue(text[start + 7]), minor < 10 else {
            throw HTTPParseError(.malformedRequestLine, "the HTTP version is malformed")
        }
        guard major == 1, minor <= 1 else {
            throw HTTPParseError(.unsupportedVersion, "only HTTP/1.0 and HTTP/1.1 are supported")
        }
        return minor == 1 ? .http1_1 : .http1_0
    }

    private static func parseHeaderLine(_ line: ArraySlice<UInt8>, into headers: inout HTTPHeaders) throws(HTTPParseError) {
        if line.first == ASCII.space || line.first == ASCII.tab {
            throw HTTPParseError(.obsoleteLineFolding, "obsolete line folding is not allowed")
        }
        guard let colon = line.firstIndex(of: ASCII.colon), colon > line.startIndex else {
            throw HTTPParseError(.malformedHeader, "a header line has no name")
        }
        let name = line[line.startIndex..<colon]
        guard name.allSatisfy(ASCII.isToken) else {
            throw HTTPParseError(.malformedHeader, "a header name has a character that is not allowed (or space before the colon)")
        }
        var value = line[(colon + 1)...]
        while let first = value.first, first == ASCII.space || first == ASCII.tab { value.removeFirst() }
        while let last = value.last, last == ASCII.space || last == ASCII.tab { value.removeLast() }
        guard value.allSatisfy(ASCII.isFieldValue) else {
            throw HTTPParseError(.malformedHeader, "a header value has a control character")
        }
        headers.add(HTTPHeaders.commonName(name) ?? String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    private enum Headed {
        /// The request, with its (empty) body.
        case complete(HTTPRequest)
        /// The body follows, to be read whole.
        case body
        /// The body follows (or is empty: `streamEnd` is next) in pieces.
        case stream(HTTPRequest)
    }

    /// Decides the body's framing once the header section is complete (RFC 9112 §6.3).
    private mutating func finishHead() throws(HTTPParseError) -> Headed {
        let progress = self.progress.take()!
        let head = HTTPRequestHead(method: progress.method, target: progress.target, version: progress.version, headers: progress.headers)
        let limit = limits.bodyLimit?(head) ?? limits.maxBodyBytes
        streaming = limits.streamsBody?(head) ?? false
        streamed = 0
        // One pass over the fields for the two that frame the body.
        var transferEncodings: [String] = []
        var lengths: [String] = []
        for field in head.headers {
            if HTTPHeaders.sameName(field.name, "Content-Length") {
                lengths.append(field.value)
            } else if HTTPHeaders.sameName(field.name, "Transfer-Encoding") {
                transferEncodings.append(field.value)
            }
        }
        if !transferEncodings.isEmpty {
            guard lengths.isEmpty else {
                throw HTTPParseError(.contentLengthWithTransferEncoding, "a request may not have both Content-Length and Transfer-Encoding")
            }
            guard head.version == .http1_1, head.headers.tokens("Transfer-Encoding") == ["chunked"] else {
                throw HTTPParseError(.unsupportedTransferEncoding, "the only transfer coding accepted is chunked (HTTP/1.1)")
            }
            body = []
            self.head = head
            state = .chunkSize(limit: limit)
            return streaming ? .stream(Self.request(head)) : .body
        }
        let length = lengths.isEmpty ? 0 : try Self.parseContentLength(lengths)
        guard length <= limit else {
            throw HTTPParseError(.bodyTooLarge, "the request body is larger than \(limit) bytes")
        }
        if streaming {
            state = length == 0 ? .streamEnd : .body(remaining: length)
            return .stream(Self.request(head))
        }
        if length == 0 { return .complete(complete(head)) }
        body = []
        body.reserveCapacity(length)
        self.head = head
        state = .body(remaining: length)
        return .body
    }

    private static func request(_ head: HTTPRequestHead) -> HTTPRequest {
        HTTPRequest(method: head.method, target: head.target, version: head.version, headers: head.headers, body: [])
    }

    /// One value, possibly repeated identically (in several fields or a comma list); digits only.
    private static func parseContentLength(_ fields: [String]) throws(HTTPParseError) -> Int {
        // The usual case: one field of plain digits.
        if fields.count == 1, fields[0].utf8.count <= 18, fields[0].utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let value = Int(fields[0]) {
            return value
        }
        var result: Int?
        for element in fields.flatMap({ $0.split(separator: ",", omittingEmptySubsequences: false) }) {
            let digits = element.trimmingOWS()
            guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                throw HTTPParseError(.invalidContentLength, "Content-Length must be a non-negative decimal number")
            }
            // Anything over 18 digits is beyond every limit: report it as too large, not malformed.
            let value = digits.utf8.count > 18 ? Int.max : Int(digits)!
            if let result, result != value {
                throw HTTPParseError(.conflictingContentLength, "the request has differing Content-Length values")
            }
            result = value
        }
        return result!
    }

    private static func parseChunkSize(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> Int {
        // chunk-size [ chunk-ext ]: extensions are allowed and ignored.
        let sizeEnd = line.firstIndex { $0 == UInt8(ascii: ";") || $0 == ASCII.space || $0 == ASCII.tab } ?? line.endIndex
        let digits = line[line.startIndex..<sizeEnd]
        guard !digits.isEmpty, digits.count <= 15 else {
            throw HTTPParseError(.malformedChunk, "a chunk size is missing or too long")
        }
        var size = 0
        for byte in digits {
            guard let value = ASCII.hexValue(byte) else { throw HTTPParseError(.malformedChunk, "a chunk size is not hexadecimal") }
            size = size << 4 | Int(value)
        }
        return size
    }

    private mutating func complete(_ head: HTTPRequestHead? = nil) -> HTTPRequest {
        let head = head ?? self.head.take()!
        state = .requestLine
        defer { body = [] }
        return HTTPRequest(method: head.method, target: head.target, version: head.version, headers: head.headers, body: body)
    }
}
