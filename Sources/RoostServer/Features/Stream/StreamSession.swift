import Foundation
import RoostFanout
import RoostHTTP
import RoostProtocol

/// One `GET /v1/stream` connection (API.md "The stream"): the WebSocket side of a fanout
/// subscriber. What is sent, and when (`ready`, live events exactly once per group, resumes and
/// their replays, nothing of a group the user is not in), is the fanout's decision
/// (`FanoutState`); this class hands it the connection and the client's frames.
///
/// `@unchecked Sendable`: its state is touched only by the session's calls, which come on the
/// connection's loop one at a time (`WebSocketSession`); a lock would take the object from
/// malloc's 48-byte size to its 64.
final class StreamSession: WebSocketSession, @unchecked Sendable {
    private let hub: StreamHub
    /// Whose stream it is until it opens, then its subscriber: the hub keeps the rest.
    private var state: State

    private enum State {
        case opening(Opening)
        case open(SubscriberID)
        case closed
    }

    private final class Opening {
        let tenantID: UUID
        let userID: UUID
        let session: SessionKey
        init(tenantID: UUID, userID: UUID, session: SessionKey) {
            self.tenantID = tenantID
            self.userID = userID
            self.session = session
        }
    }

    init(tenantID: UUID, userID: UUID, session: SessionKey, hub: StreamHub) {
        self.hub = hub
        state = .opening(Opening(tenantID: tenantID, userID: userID, session: session))
    }

    var acceptsBinary: Bool { false }

    func opened(_ channel: WebSocketChannel) {
        guard case .opening(let opening) = state else { return }
        state = .open(hub.open(channel, tenant: opening.tenantID, user: opening.userID, session: opening.session))
    }

    func received(_ message: WebSocketMessage, on channel: WebSocketChannel) {
        guard case .text(let text) = message else { return }
        switch StreamClientFrame.parse(text) {
        case .failure(let error):
            channel.send(frame: StreamFrames.error(code: error.code, message: error.message))
        case .success(.resume(let cursors)):
            guard case .open(let id) = state else { return }
            hub.resume(id, cursors: cursors)
        }
    }

    func closed(code: WebSocketCloseCode?) {
        if case .open(let id) = state { hub.close(id) }
        state = .closed
    }
}
