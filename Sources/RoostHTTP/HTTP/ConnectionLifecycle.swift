/// How much more of its peer's input a connection takes, and when it ends: the one value that
/// stands for what were two booleans ("stop reading", "close once drained") set in twenty
/// places. `after(_:)` is a pure function of the state and what happened, tested without a
/// socket (ConnectionStateTests); `HTTPConnection` only carries it out.
enum ConnectionLifecycle: Equatable, Sendable {
    /// Requests (or, after the switch, WebSocket frames) are read; the connection stays open.
    case open
    /// The last request's body still streams in: it is read, nothing after it; close once answered.
    case lastBody
    /// An upgrade request was taken: no more requests are read; the connection waits for its
    /// 101 (or the refusal).
    case upgrading
    /// Nothing more is read: close once everything owed is written.
    case draining

    enum Event: Equatable, Sendable {
        /// The peer finished sending (end of file).
        case peerFinished
        /// A request could not be parsed.
        case malformed
        /// A request that does not keep the connection alive, and whether its body streams in after it.
        case lastRequest(streamingBody: Bool)
        /// A streamed request body ended.
        case bodyEnded
        /// A response that ends the connection: not kept alive, written before its request's
        /// body ended, a refused upgrade, or a streamed body cut off.
        case finalResponse
        /// An upgrade request was taken.
        case upgradeTaken
        /// The 101 was written: WebSocket frames are read from here on.
        case switchedProtocols
        /// The server shuts down, or the WebSocket's closing handshake is under way.
        case closing
    }

    func after(_ event: Event) -> ConnectionLifecycle {
        switch event {
        case .peerFinished, .malformed, .finalResponse, .closing: .draining
        case .lastRequest(let streamingBody): streamingBody && readsInput ? .lastBody : .draining
        case .bodyEnded: self == .lastBody ? .draining : self
        case .upgradeTaken: self == .open || self == .upgrading ? .upgrading : .draining
        case .switchedProtocols: .open
        }
    }

    /// Whether the socket's input is still read as requests (a WebSocket always reads frames).
    var readsInput: Bool { self == .open || self == .lastBody }
    /// Whether the connection closes once nothing more is owed.
    var closesWhenDrained: Bool { self == .lastBody || self == .draining }
}
