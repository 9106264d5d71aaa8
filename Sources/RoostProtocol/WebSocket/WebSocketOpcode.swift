/// A frame opcode (RFC 6455 §5.2). An open set on the wire, so a struct over the raw value.
public struct WebSocketOpcode: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let continuation = WebSocketOpcode(rawValue: 0x0)
    public static let text = WebSocketOpcode(rawValue: 0x1)
    public static let binary = WebSocketOpcode(rawValue: 0x2)
    public static let close = WebSocketOpcode(rawValue: 0x8)
    public static let ping = WebSocketOpcode(rawValue: 0x9)
    public static let pong = WebSocketOpcode(rawValue: 0xA)

    /// Close, ping and pong: at most 125 bytes, never fragmented (§5.5).
    public var isControl: Bool { rawValue & 0x8 != 0 }
    /// The six opcodes RFC 6455 defines; the rest are reserved and fail the connection.
    public var isKnown: Bool { [0x0, 0x1, 0x2, 0x8, 0x9, 0xA].contains(rawValue) }

    public var description: String {
        switch self {
        case .continuation: return "continuation"
        case .text: return "text"
        case .binary: return "binary"
        case .close: return "close"
        case .ping: return "ping"
        case .pong: return "pong"
        default: return "reserved(0x\(String(rawValue, radix: 16)))"
        }
    }
}

/// A close status code (RFC 6455 §7.4). An open set, so a struct over the raw value.
public struct WebSocketCloseCode: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public var description: String { String(rawValue) }

    public static let normal = WebSocketCloseCode(rawValue: 1000)
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    public static let invalidPayload = WebSocketCloseCode(rawValue: 1007)
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    public static let internalError = WebSocketCloseCode(rawValue: 1011)
    public static let tryAgainLater = WebSocketCloseCode(rawValue: 1013)

    /// Whether a peer may send this code in a close frame: 1000–1003, 1007–1011 (registered,
    /// not reserved for local use) and 3000–4999 (libraries and applications). 1004–1006 and
    /// 1015 must never be sent; 1012–1014 are registered later but not accepted from clients here.
    public var isValidOnTheWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1011, 3000...4999: return true
        default: return false
        }
    }
}
