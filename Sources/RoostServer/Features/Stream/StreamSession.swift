import Foundation
import RoostFanout
import RoostHTTP
import RoostProtocol
import Synchronization

/// One `GET /v1/stream` connection (API.md "The stream"): the WebSocket side of a fanout
/// subscriber. What is sent, and when (`ready`, live events exactly once per group, resumes and
/// their replays, nothing of a group the user is not in), is the fanout's decision
/// (`FanoutState`); this class hands it the connection and the client's frames.
final class StreamSession: WebSocketSession {
    private let hub: StreamHub
    /// Whose stream it is until it opens, then its subscriber: the hub keeps the rest, so an
    /// idle stream's session is 40 bytes, not 90.
    private let state: Mutex<State>

    private enum State {
        case opening(Opening)
        case open(SubscriberID)
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
        state = Mutex(.opening(Opening(tenantID: tenantID, userID: userID, session: session)))
    }

    /// The subscriber, once the connection has opened.
    private var subscriber: SubscriberID? {
        state.withLock { state in
            if case .open(let id) = state { id } else { nil }
        }
    }

    var acceptsBinary: Bool { false }

    func opened(_ channel: WebSocketChannel) {
        guard case .opening(let opening) = state.withLock({ $0 }) else { return }
        let id = hub.open(channel, tenant: opening.tenantID, user: opening.userID, session: opening.session)
        state.withLock { $0 = .open(id) }
    }

    func received(_ message: WebSocketMessage, on channel: WebSocketChannel) {
        guard case .text(let text) = message else { return }
        switch StreamClientFrame.parse(text) {
        case .failure(let error):
            channel.send(frame: StreamFrames.error(code: error.code, message: error.message))
        case .success(.resume(let cursors)):
            guard let id = subscriber else { return }
            hub.resume(id, cursors: cursors)
        }
    }

    func closed(code: WebSocketCloseCode?) {
        if let id = subscriber { hub.close(id) }
    }
}
