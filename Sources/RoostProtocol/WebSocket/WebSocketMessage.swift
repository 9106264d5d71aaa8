/// A complete message or control frame, as the reader yields it.
public enum WebSocketMessage: Sendable, Equatable {
    /// A text message, UTF-8 validated, reassembled from its fragments.
    case text(String)
    case binary([UInt8])
    case ping([UInt8])
    case pong([UInt8])
    /// A close frame; `code` is nil for an empty close payload (RFC 6455 §7.1.5).
    case close(code: WebSocketCloseCode?, reason: String)
}

/// Why the connection must fail, with the close code to send (RFC 6455 §7.1.7, §7.4.1).
public struct WebSocketProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    public let closeCode: WebSocketCloseCode
    public let reason: String

    public init(_ closeCode: WebSocketCloseCode, _ reason: String) {
        self.closeCode = closeCode
        self.reason = reason
    }

    public var description: String { "\(closeCode): \(reason)" }
}
