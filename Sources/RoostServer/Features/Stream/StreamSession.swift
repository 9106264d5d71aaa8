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
    let tenantID: UUID
    let userID: UUID
    let sessionHash: String
    private let hub: StreamHub
    /// Set when the connection opens; the hub forgets it when it closes.
    private let subscriber = Mutex<SubscriberID?>(nil)

    init(tenantID: UUID, userID: UUID, sessionHash: String, hub: StreamHub) {
        self.tenantID = tenantID
        self.userID = userID
        self.sessionHash = sessionHash
        self.hub = hub
    }

    var acceptsBinary: Bool { false }

    func opened(_ channel: WebSocketChannel) {
        let id = hub.open(channel, tenant: tenantID, user: userID, sessionHash: sessionHash)
        subscriber.withLock { $0 = id }
    }

    func received(_ message: WebSocketMessage, on channel: WebSocketChannel) {
        guard case .text(let text) = message else { return }
        switch StreamClientFrame.parse(text) {
        case .failure(let error):
            channel.send(frame: StreamFrames.error(code: error.code, message: error.message))
        case .success(.resume(let cursors)):
            guard let id = subscriber.withLock({ $0 }) else { return }
            hub.resume(id, cursors: cursors)
        }
    }

    func closed(code: WebSocketCloseCode?) {
        if let id = subscriber.withLock({ $0 }) { hub.close(id) }
    }
}
