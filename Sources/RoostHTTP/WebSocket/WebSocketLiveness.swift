import RoostProtocol

/// One WebSocket's closing handshake and keep-alive (RFC 6455 §5.5.1-3, §7): a value the
/// connection tells what happened and that answers with what to do, so both are tested without
/// a socket or a clock (WebSocketLivenessTests). Times are the loop clock's nanoseconds.
struct WebSocketLiveness: Equatable, Sendable {
    /// A control frame to send.
    enum Control: Equatable, Sendable {
        case ping
        case pong([UInt8])
        /// A close frame; nil code: an empty close (an echo of a close that carried none).
        case close(WebSocketCloseCode?, reason: String)

        /// The frame's bytes (a server's frames are unmasked).
        var frame: [UInt8] {
            var bytes: [UInt8] = []
            switch self {
            case .ping: WebSocketFrameEncoder.encode(.ping, payload: [], into: &bytes)
            case .pong(let payload): WebSocketFrameEncoder.encode(.pong, payload: payload, into: &bytes)
            case .close(let code?, let reason): bytes = WebSocketFrameEncoder.close(code, reason: reason)
            case .close(nil, _): WebSocketFrameEncoder.encode(.close, payload: [], into: &bytes)
            }
            return bytes
        }
    }

    enum Action: Equatable, Sendable {
        case send(Control)
        /// Close the socket once everything queued is written.
        case closeWhenWritten
        /// Close the socket now.
        case closeNow
        /// Our close is out: close anyway if the peer's has not come within the close timeout.
        case awaitPeerClose
        /// Tick again after the ping interval.
        case scheduleNextPing
    }

    // The small fields first, in this order, so that they share one word: every idle stream
    // holds one of these.
    /// The code of the peer's close frame, when one came.
    private(set) var closeReceived: WebSocketCloseCode?
    /// Our close frame is queued: no data frame follows it.
    private(set) var closeSent = false
    private let pongTimeoutMilliseconds: UInt32
    private(set) var lastPingAt: UInt64 = 0
    private(set) var lastPongAt: UInt64 = 0

    /// `pongTimeout`: how long a ping may wait for its pong, in nanoseconds (kept to the millisecond).
    init(pongTimeout: UInt64) { pongTimeoutMilliseconds = UInt32(clamping: pongTimeout / 1_000_000) }

    var pongTimeout: UInt64 { UInt64(pongTimeoutMilliseconds) * 1_000_000 }

    /// Whether a data frame may still be sent.
    var sendsData: Bool { !closeSent }

    /// A ping is answered with its payload, unless we are closing (nothing but the close follows ours).
    mutating func receivedPing(_ payload: [UInt8]) -> [Action] { closeSent ? [] : [.send(.pong(payload))] }

    mutating func receivedPong(at now: UInt64) { lastPongAt = now }

    /// The peer's close: the end of a handshake we began, or one to answer with its code (§5.5.1).
    mutating func receivedClose(_ code: WebSocketCloseCode?) -> [Action] {
        closeReceived = code
        if closeSent { return [.closeNow] }
        closeSent = true
        return [.send(.close(code, reason: "")), .closeWhenWritten]
    }

    /// We close (shutdown, the session's choice, data we do not take): our frame, then a bounded wait.
    mutating func startClosing(_ code: WebSocketCloseCode, reason: String) -> [Action] {
        guard !closeSent else { return [] }
        closeSent = true
        return [.send(.close(code, reason: reason)), .awaitPeerClose]
    }

    /// A protocol error: the code, if no close went yet, and the end once it is written.
    mutating func failed(_ code: WebSocketCloseCode, reason: String) -> [Action] {
        guard !closeSent else { return [.closeWhenWritten] }
        closeSent = true
        return [.send(.close(code, reason: reason)), .closeWhenWritten]
    }

    /// The client stopped reading and its queue passed its bound: 1013, best effort, and gone.
    mutating func fellBehind() -> [Action] {
        closeSent = true
        return [.send(.close(.tryAgainLater, reason: "client fell behind")), .closeNow]
    }

    /// The ping timer fired: ping if the last one was answered, give up if it has waited too long.
    mutating func pingTick(at now: UInt64) -> [Action] {
        guard !closeSent else { return [] }
        let awaitingPong = lastPingAt > lastPongAt
        if awaitingPong && now - lastPingAt >= pongTimeout {
            closeSent = true
            return [.send(.close(.goingAway, reason: "pong timeout")), .closeNow]
        }
        if awaitingPong { return [.scheduleNextPing] }
        lastPingAt = now
        return [.send(.ping), .scheduleNextPing]
    }
}
