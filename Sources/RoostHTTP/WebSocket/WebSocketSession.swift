import RoostProtocol

/// The application side of one WebSocket connection. Methods are called on the connection's
/// event loop, one at a time (`opened` first, `closed` last), and must not block: hand slow work
/// to a task and reply through the channel.
public protocol WebSocketSession: AnyObject, Sendable {
    /// Whether binary messages are welcome; if not, one closes the connection with 1003.
    var acceptsBinary: Bool { get }
    func opened(_ channel: WebSocketChannel)
    func received(_ message: WebSocketMessage, on channel: WebSocketChannel)
    func closed(code: WebSocketCloseCode?)
}

/// Decides whether an upgrade request may become a session (authentication goes here);
/// throws `APIError` to refuse with that response.
public typealias WebSocketAcceptor = @Sendable (RequestContext) async throws -> WebSocketSession

/// Sends to one WebSocket connection from any thread: every call hops to the connection's loop,
/// in order with every other channel's sends there (`EventLoop.executeInOrder`): a frame sent to
/// thousands of connections is written a turn's budget at a time (`NetworkLimits.framesPerLoopTurn`),
/// and what is sent after it, to any of them, waits its turn.
///
/// The channel is also its connection's state after `101 Switching Protocols` (RFC 6455), the
/// payload of its `.webSocket` mode: one object a stream, not two. `@unchecked Sendable`: that
/// state is touched only on the connection's loop (HTTPConnection+WebSocket.swift), and the
/// rest is constant.
public final class WebSocketChannel: @unchecked Sendable {
    private let loop: EventLoop
    private let connection: LoopBound<HTTPConnection>
    let session: WebSocketSession
    /// The frame reader, kept only while part of a frame or message is pending: an idle one is
    /// dropped and a new one made for the next read (`WebSocketReader.isIdle`), so an idle
    /// stream keeps none of its hundred-odd bytes.
    private var pending: PendingReader?
    /// The closing handshake and the keep-alive, decided apart from the socket.
    var liveness: WebSocketLiveness
    /// The bounded wait for the peer's close, once ours is out (the keep-alive is the loop's
    /// tick, which needs no timer: `EventLoop.scheduleTick`); 0, which no timer is, when none
    /// runs. Not an optional, whose extra byte would take the object into malloc's next size.
    private var closeTimerToken: UInt64 = 0
    var closeTimer: UInt64? {
        get { closeTimerToken == 0 ? nil : closeTimerToken }
        set { closeTimerToken = newValue ?? 0 }
    }

    private final class PendingReader {
        var reader: WebSocketReader
        init(_ reader: WebSocketReader) { self.reader = reader }
    }

    init(loop: EventLoop, connection: HTTPConnection, session: WebSocketSession, pongTimeout: UInt64) {
        self.loop = loop
        self.connection = LoopBound(value: connection)
        self.session = session
        liveness = WebSocketLiveness(pongTimeout: pongTimeout)
    }

    // MARK: - The connection's state (on its loop only)

    /// Bytes read from the socket.
    func feed<Bytes: Collection<UInt8>>(_ bytes: Bytes) {
        guard !bytes.isEmpty else { return }
        let pending = self.pending
            ?? PendingReader(WebSocketReader(role: .server, maxMessageBytes: connection.value.context.limits.maxWebSocketMessageBytes))
        pending.reader.feed(bytes)
        self.pending = pending
    }

    /// The next message read, or `.needMore`, when the reader is let go of if it holds nothing.
    func nextMessage() -> WebSocketReader.Next {
        guard let pending else { return .needMore }
        let next = pending.reader.next()
        if case .needMore = next {
            pending.reader.releaseIdleBuffers()
            if pending.reader.isIdle { self.pending = nil }
        }
        return next
    }

    func cancelTimers(on loop: EventLoop) {
        if let closeTimer { loop.cancelTimer(closeTimer) }
    }

    // MARK: - Sending, from any thread

    /// Queues an already encoded server frame; the same bytes may be queued on many channels.
    public func send(frame: [UInt8]) {
        let connection = self.connection
        loop.executeInOrder(spending: 1) { connection.value.queueFrame(frame) }
    }

    /// Queues one frame on many connections: a single hop to each event loop involved, in the
    /// order the channels are given, written over as many of the loop's turns as its budget asks.
    public static func send(frame: [UInt8], to channels: [WebSocketChannel]) {
        // The loops involved are a handful, found by identity; each walks the one list and takes
        // its own connections. No list per loop: an alert to 10,000 members is 10,000 pointer
        // comparisons here, not 10,000 hashed inserts and retains.
        var loops: [EventLoop] = []
        for channel in channels where !loops.contains(where: { $0 === channel.loop }) { loops.append(channel.loop) }
        for loop in loops {
            let next = LoopBound(value: ListPosition())
            loop.executeInOrder { budget in
                var index = next.value.index
                while index < channels.count && budget > 0 {
                    let channel = channels[index]
                    index += 1
                    if channel.loop === loop {
                        channel.connection.value.queueFrame(frame)
                        budget -= 1
                    }
                }
                next.value.index = index
                return index == channels.count
            }
        }
    }

    /// How far a loop has come through a send's channel list (touched on that loop only).
    private final class ListPosition {
        var index = 0
    }

    public func send(text: String) {
        send(frame: WebSocketFrameEncoder.text(text))
    }

    public func send(binary: [UInt8]) {
        var frame: [UInt8] = []
        WebSocketFrameEncoder.encode(.binary, payload: binary, into: &frame)
        send(frame: frame)
    }

    /// Bytes queued on the connection and not yet written (0 once it is closed): a producer of
    /// many frames (a replay) waits for this to fall rather than overrun the bounded queue.
    public func queuedBytes() async -> Int {
        let connection = self.connection
        return await withCheckedContinuation { continuation in
            // In order: the frames sent before this call count.
            loop.executeInOrder(spending: 0) { continuation.resume(returning: connection.value.isClosed ? 0 : connection.value.outbound.byteCount) }
        }
    }

    /// Runs `action` on the connection's event loop after `milliseconds` (the loop's timer heap:
    /// no thread or dispatch timer per connection).
    public func schedule(afterMilliseconds milliseconds: Int, _ action: @escaping @Sendable () -> Void) {
        let loop = self.loop
        loop.execute { _ = loop.schedule(afterNanoseconds: UInt64(milliseconds) * 1_000_000) { action() } }
    }

    /// Starts the closing handshake (RFC 6455 §7.1.2).
    public func close(_ code: WebSocketCloseCode, reason: String = "") {
        let connection = self.connection
        // In order: the frames sent before the close go out before it.
        loop.executeInOrder(spending: 1) { connection.value.startClosing(code, reason: reason) }
    }
}

/// The test-only echo endpoint (`/v1/conformance/echo`, enabled by `--conformance-echo`):
/// every text or binary message comes back unchanged, for conformance suites and tests.
public final class EchoSession: WebSocketSession {
    public init() {}
    public var acceptsBinary: Bool { true }
    public func opened(_ channel: WebSocketChannel) {}
    public func received(_ message: WebSocketMessage, on channel: WebSocketChannel) {
        switch message {
        case .text(let text): channel.send(text: text)
        case .binary(let bytes): channel.send(binary: bytes)
        default: break
        }
    }
    public func closed(code: WebSocketCloseCode?) {}
}
