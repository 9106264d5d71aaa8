/// HTTP/2 framing (RFC 9113 §4): the nine-octet frame header, and a reader that cuts a byte
/// stream into frames no larger than the size we advertised.
public enum HTTP2 {
    /// What a client sends first on a connection (RFC 9113 §3.4), before its SETTINGS.
    public static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    public enum FrameType: UInt8, Sendable {
        case data = 0, headers = 1, priority = 2, resetStream = 3, settings = 4, pushPromise = 5, ping = 6, goAway = 7
        case windowUpdate = 8, continuation = 9
    }

    public enum Flag {
        public static let endStream: UInt8 = 0x1
        public static let ack: UInt8 = 0x1
        public static let endHeaders: UInt8 = 0x4
        public static let padded: UInt8 = 0x8
        public static let priority: UInt8 = 0x20
    }

    public enum Setting: UInt16, Sendable {
        case headerTableSize = 1, enablePush = 2, maxConcurrentStreams = 3, initialWindowSize = 4, maxFrameSize = 5
        case maxHeaderListSize = 6
    }

    /// Error codes (RFC 9113 §7), carried by RST_STREAM and GOAWAY.
    public enum ErrorCode: UInt32, Sendable {
        case noError = 0, protocolError = 1, internalError = 2, flowControlError = 3, settingsTimeout = 4, streamClosed = 5
        case frameSizeError = 6, refusedStream = 7, cancel = 8, compressionError = 9, connectError = 10
        case enhanceYourCalm = 11, inadequateSecurity = 12, http11Required = 13

        /// The code's name as RFC 9113 writes it, or the number for one it does not define.
        public static func name(_ code: UInt32) -> String {
            guard let known = ErrorCode(rawValue: code) else { return "error \(code)" }
            return switch known {
            case .noError: "NO_ERROR"
            case .protocolError: "PROTOCOL_ERROR"
            case .internalError: "INTERNAL_ERROR"
            case .flowControlError: "FLOW_CONTROL_ERROR"
            case .settingsTimeout: "SETTINGS_TIMEOUT"
            case .streamClosed: "STREAM_CLOSED"
            case .frameSizeError: "FRAME_SIZE_ERROR"
            case .refusedStream: "REFUSED_STREAM"
            case .cancel: "CANCEL"
            case .compressionError: "COMPRESSION_ERROR"
            case .connectError: "CONNECT_ERROR"
            case .enhanceYourCalm: "ENHANCE_YOUR_CALM"
            case .inadequateSecurity: "INADEQUATE_SECURITY"
            case .http11Required: "HTTP_1_1_REQUIRED"
            }
        }
    }

    /// A connection error: what the peer did wrong, and the code our GOAWAY carries.
    public struct ConnectionError: Error, Equatable, CustomStringConvertible {
        public let code: ErrorCode
        public let description: String

        public init(_ code: ErrorCode, _ description: String) {
            self.code = code
            self.description = description
        }
    }

    /// One frame as read: its type is a raw octet, since unknown types must be ignored, not refused.
    public struct Frame: Equatable, Sendable {
        public let type: UInt8
        public let flags: UInt8
        public let stream: UInt32
        public let payload: [UInt8]

        public init(type: UInt8, flags: UInt8, stream: UInt32, payload: [UInt8]) {
            self.type = type
            self.flags = flags
            self.stream = stream
            self.payload = payload
        }

        public var kind: FrameType? { FrameType(rawValue: type) }

        public func has(_ flag: UInt8) -> Bool { flags & flag != 0 }
    }

    /// A frame's bytes: header and payload (which must fit the peer's frame size).
    public static func frame(_ type: FrameType, flags: UInt8 = 0, stream: UInt32 = 0, payload: [UInt8] = []) -> [UInt8] {
        var bytes: [UInt8] = []
        appendFrame(type, flags: flags, stream: stream, payload: payload[...], to: &bytes)
        return bytes
    }

    public static func appendFrame(_ type: FrameType, flags: UInt8 = 0, stream: UInt32 = 0, payload: ArraySlice<UInt8>, to bytes: inout [UInt8]) {
        let length = payload.count
        bytes += [UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length),
                  type.rawValue, flags]
        appendUInt32(stream & 0x7fff_ffff, to: &bytes)
        bytes += payload
    }

    static func appendUInt32(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8(truncatingIfNeeded: value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8),
                  UInt8(truncatingIfNeeded: value)]
    }

    static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// Cuts the bytes a connection receives into frames.
    public struct FrameReader: Sendable {
        private var buffer: [UInt8] = []
        private var start = 0
        /// SETTINGS_MAX_FRAME_SIZE as we advertised it: a larger frame is a FRAME_SIZE_ERROR.
        public var maxFrameSize: Int

        public init(maxFrameSize: Int = 16_384) { self.maxFrameSize = maxFrameSize }

        public mutating func append(_ bytes: [UInt8]) {
            if start > 0, start == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                start = 0
            }
            buffer += bytes
        }

        /// The next whole frame, or nil until more bytes come.
        public mutating func next() throws(ConnectionError) -> Frame? {
            guard buffer.count - start >= 9 else { return nil }
            let length = Int(buffer[start]) << 16 | Int(buffer[start + 1]) << 8 | Int(buffer[start + 2])
            guard length <= maxFrameSize else { throw ConnectionError(.frameSizeError, "a frame of \(length) bytes, above \(maxFrameSize)") }
            guard buffer.count - start >= 9 + length else { return nil }
            let frame = Frame(type: buffer[start + 3], flags: buffer[start + 4], stream: HTTP2.uint32(buffer, at: start + 5) & 0x7fff_ffff,
                              payload: Array(buffer[start + 9..<start + 9 + length]))
            start += 9 + length
            if start > 65_536, start * 2 > buffer.count {
                buffer.removeFirst(start)
                start = 0
            }
            return frame
        }
    }
}
