import Foundation
import RoostProtocol

/// The stream's server frames (API.md "The stream") as complete WebSocket text frames, from the
/// JSON their owners in RoostProtocol write. An event's frame is built once per node and the
/// same bytes go to every subscriber.
public enum StreamFrames {
    public static func event(_ event: StreamEvent) -> [UInt8] {
        WebSocketFrameEncoder.text(event.frameJSON)
    }

    /// The `group.removed` notice for a group the user is no longer in.
    public static func groupRemoved(_ group: UUID, reason: String) -> [UInt8] {
        WebSocketFrameEncoder.text(StreamFrameJSON.groupRemoved(group, reason: reason))
    }

    /// `ready` or `resumed`: where each group stands.
    public static func groups(type: String, userID: UUID?, _ groups: [(UUID, Int64)]) -> [UInt8] {
        WebSocketFrameEncoder.text(StreamFrameJSON.groups(type: type, userID: userID, groups))
    }

    public static func reset(_ group: UUID, oldestSeq: Int64) -> [UInt8] {
        WebSocketFrameEncoder.text(StreamFrameJSON.reset(group, oldestSeq: oldestSeq))
    }

    public static func error(code: APIError.Code, message: String) -> [UInt8] {
        WebSocketFrameEncoder.text(StreamFrameJSON.error(code: code, message: message))
    }
}
