/// Turns received bytes into WebSocket messages (RFC 6455 §5), enforcing every framing rule.
///
/// A push-style state machine in the manner of swift-nio's frame decoder: `feed(_:)` bytes,
/// then `next()` until `.needMore`. Limits are checked as soon as a frame header is complete,
/// before any payload is buffered; text is UTF-8-validated as payload bytes arrive, so an
/// invalid sequence fails the connection before the rest of its frame is read. Control frames
/// may arrive between the fragments of a message and are returned at once.
public struct WebSocketReader: Sendable {
    /// Which side reads: a server requires masked frames, a client requires unmasked ones.
    public enum Role: Sendable {
        case server
        case client
    }

    public enum Next: Sendable, Equatable {
        case message(WebSocketMessage)
        case needMore
        case failure(WebSocketProtocolError)
    }

    struct FrameHeader: Sendable {
        var fin: Bool
        var opcode: WebSocketOpcode
        var maskKey: UInt32?
        var length: Int
        var headerLength: Int
    }

    private enum State: Sendable {
        case header
        case payload(FrameHeader, received: Int)
        case failed(WebSocketProtocolError)
    }

    public let role: Role
    public let maxMessageBytes: Int
    private var state = State.header
    private var input: [UInt8] = []
    private var readIndex = 0
    /// The data message being reassembled (opcode of its first frame; nil when none).
    private var messageOpcode: WebSocketOpcode?
    private var message: [UInt8] = []
    private var control: [UInt8] = []
    private var validator = UTF8Validator()

    public init(role: Role = .server, maxMessageBytes: Int = 64 * 1024) {
        self.role = role
        self.maxMessageBytes = maxMessageBytes
    }

    /// Bytes received but not yet consumed, plus the partial message: for memory accounting.
    public var bufferedByteCount: Int { input.count - readIndex + message.count }

    public mutating func feed<Bytes: Collection<UInt8>>(_ bytes: Bytes) {
        if case .failed = state { return }
        if readIndex > 0 && readIndex == input.count {
            input.removeAll(keepingCapacity: true)
            readIndex = 0
        } else if readIndex > 4096 && readIndex >= input.count / 2 {
            input.removeSubrange(0..<readIndex)
            readIndex = 0
        }
        input.append(contentsOf: bytes)
    }

    /// Gives back buffer memory while nothing is pending (an idle connection keeps no buffers).
    public mutating func releaseIdleBuffers() {
        if readIndex == input.count { input = []; readIndex = 0 }
        if messageOpcode == nil { message = [] }
    }

    /// Nothing received is pending: no bytes past the last frame, and no frame or fragmented
    /// message begun. Such a reader, its buffers released (`releaseIdleBuffers`), is the same as
    /// a new one, so a connection may drop it and make a new one for its next read.
    public var isIdle: Bool {
        guard case .header = state else { return false }
        return readIndex == input.count && messageOpcode == nil
    }

    public mutating func next() -> Next {
        while true {
            switch state {
            case .failed(let error):
                return .failure(error)
            case .header:
                switch parseHeader() {
                case .none:
                    return .needMore
                case .some(.failure(let error)):
                    state = .failed(error)
                    return .failure(error)
                case .some(.success(let header)):
                    readIndex += header.headerLength
                    if header.opcode.isControl { control.removeAll(keepingCapacity: true) }
                    if header.opcode == .text || header.opcode == .binary { messageOpcode = header.opcode }
                    state = .payload(header, received: 0)
                }
            case .payload(let header, let received):
                let take = min(header.length - received, input.count - readIndex)
                if take > 0 || header.length == 0 {
                    if let error = consumePayload(header, from: received, count: take) {
                        state = .failed(error)
                        return .failure(error)
                    }
                }
                guard received + take == header.length else {
                    state = .payload(header, received: received + take)
                    return .needMore
                }
                state = .header
                switch finishFrame(header) {
                case .none: continue
                case .some(.success(let message)): return .message(message)
                case .some(.failure(let error)):
                    state = .failed(error)
                    return .failure(error)
                }
            }
        }
    }

    // MARK: - Frame header (§5.2)

    private func parseHeader() -> Result<FrameHeader, WebSocketProtocolError>? {
        let available = input.count - readIndex
        guard available >= 2 else { return nil }
        let first = input[readIndex], second = input[readIndex + 1]
        let fin = first & 0x80 != 0
        let opcode = WebSocketOpcode(rawValue: first & 0x0F)
        let masked = second & 0x80 != 0
        let length7 = Int(second & 0x7F)

        if first & 0x70 != 0 { return .failure(.init(.protocolError, "reserved bits set without an extension")) }
        if !opcode.isKnown { return .failure(.init(.protocolError, "reserved opcode \(opcode)")) }
        if opcode.isControl {
            if !fin { return .failure(.init(.protocolError, "fragmented control frame")) }
            if length7 > 125 { return .failure(.init(.protocolError, "control frame longer than 125 bytes")) }
        } else if opcode == .continuation {
            if messageOpcode == nil { return .failure(.init(.protocolError, "continuation frame without a message to continue")) }
        } else if messageOpcode != nil {
            return .failure(.init(.protocolError, "new data frame before the fragmented message ended"))
        }
        switch (role, masked) {
        case (.server, false): return .failure(.init(.protocolError, "client frames must be masked"))
        case (.client, true): return .failure(.init(.protocolError, "server frames must not be masked"))
        default: break
        }

        let lengthBytes = length7 == 126 ? 2 : (length7 == 127 ? 8 : 0)
        let headerLength = 2 + lengthBytes + (masked ? 4 : 0)
        guard available >= 2 + lengthBytes else { return nil }
        var length = length7
        if lengthBytes == 2 {
            length = Int(input[readIndex + 2]) << 8 | Int(input[readIndex + 3])
            if length < 126 { return .failure(.init(.protocolError, "16-bit length used for a short payload")) }
        } else if lengthBytes == 8 {
            if input[readIndex + 2] & 0x80 != 0 { return .failure(.init(.protocolError, "64-bit length with the top bit set")) }
            var value: UInt64 = 0
            for offset in 2..<10 { value = value << 8 | UInt64(input[readIndex + offset]) }
            if value < 65_536 { return .failure(.init(.protocolError, "64-bit length used for a payload under 64 KiB")) }
            // Decide "too big" before the payload: anything over the limit is refused outright.
            length = value > UInt64(Int.max / 2) ? Int.max / 2 : Int(value)
        }
        if !opcode.isControl && message.count + length > maxMessageBytes {
            return .failure(.init(.messageTooBig, "message larger than \(maxMessageBytes) bytes"))
        }
        guard available >= headerLength else { return nil }
        var key: UInt32?
        if masked {
            let k = readIndex + 2 + lengthBytes
            key = WebSocketMasking.key(input[k], input[k + 1], input[k + 2], input[k + 3])
        }
        return .success(FrameHeader(fin: fin, opcode: opcode, maskKey: key, length: length, headerLength: headerLength))
    }

    // MARK: - Payload

    /// Moves `count` payload bytes out of the input, unmasks them, and validates text at once.
    private mutating func consumePayload(_ header: FrameHeader, from offset: Int, count: Int) -> WebSocketProtocolError? {
        let start = readIndex
        readIndex += count
        if header.opcode.isControl {
            control.append(contentsOf: input[start..<(start + count)])
            if let key = header.maskKey {
                control.withUnsafeMutableBytes {
                    WebSocketMasking.apply(key: key, offset: offset, to: UnsafeMutableRawBufferPointer(rebasing: $0[(offset)...]))
                }
            }
            return nil
        }
        let messageStart = message.count
        message.append(contentsOf: input[start..<(start + count)])
        var valid = true
        message.withUnsafeMutableBytes { raw in
            let fresh = UnsafeMutableRawBufferPointer(rebasing: raw[messageStart...])
            if let key = header.maskKey { WebSocketMasking.apply(key: key, offset: offset, to: fresh) }
            if messageOpcode == .text { valid = validator.validate(UnsafeRawBufferPointer(fresh)) }
        }
        return valid ? nil : WebSocketProtocolError(.invalidPayload, "text message is not valid UTF-8")
    }

    private mutating func finishFrame(_ header: FrameHeader) -> Result<WebSocketMessage, WebSocketProtocolError>? {
        switch header.opcode {
        case .ping: return .success(.ping(control))
        case .pong: return .success(.pong(control))
        case .close: return Self.parseClose(control).map { .close(code: $0.0, reason: $0.1) }
        default:
            guard header.fin else { return nil }
            defer {
                messageOpcode = nil
                validator = UTF8Validator()
            }
            let payload = message
            message = []
            if messageOpcode == .binary { return .success(.binary(payload)) }
            guard validator.isComplete else {
                return .failure(.init(.invalidPayload, "text message ends inside a UTF-8 sequence"))
            }
            return .success(.text(String(decoding: payload, as: UTF8.self)))
        }
    }

    /// A close payload: empty, or a valid code and a UTF-8 reason (§5.5.1, §7.4).
    static func parseClose(_ payload: [UInt8]) -> Result<(WebSocketCloseCode?, String), WebSocketProtocolError> {
        if payload.isEmpty { return .success((nil, "")) }
        guard payload.count >= 2 else { return .failure(.init(.protocolError, "close payload of one byte")) }
        let code = WebSocketCloseCode(rawValue: UInt16(payload[0]) << 8 | UInt16(payload[1]))
        guard code.isValidOnTheWire else { return .failure(.init(.protocolError, "close code \(code) is not allowed")) }
        let reason = Array(payload[2...])
        var validator = UTF8Validator()
        guard validator.validate(reason), validator.isComplete else {
            return .failure(.init(.invalidPayload, "close reason is not valid UTF-8"))
        }
        return .success((code, String(decoding: reason, as: UTF8.self)))
    }
}
