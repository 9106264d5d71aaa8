import Foundation
import RoostPersistence
import RoostProtocol

/// The stream's server frames (API.md "The stream"), as complete WebSocket text frames. An
/// event's frame is built once per node and the same bytes go to every subscriber.
public enum StreamFrames {
    public static func event(_ event: StreamEvent) -> [UInt8] {
        WebSocketFrameEncoder.text(event.frameJSON)
    }

    /// `{"type":"notice","event":..,"data":{"group_id":..,"reason":..}}` for a group the user left.
    public static func groupRemoved(_ group: UUID, reason: String) -> [UInt8] {
        WebSocketFrameEncoder.text(
            "{\"type\":\"notice\",\"event\":\"group.removed\",\"data\":{\"group_id\":\"\(group.uuidString.lowercased())\","
                + "\"reason\":\(JSONString.quote(reason))}}")
    }

    /// `{"type":"ready"|"resumed", [user_id], "groups":[{"id","last_seq"}]}`.
    public static func groups(type: String, userID: UUID?, _ groups: [(UUID, Int64)]) -> [UInt8] {
        let list = groups.map { "{\"id\":\"\($0.0.uuidString.lowercased())\",\"last_seq\":\($0.1)}" }.joined(separator: ",")
        let user = userID.map { ",\"user_id\":\"\($0.uuidString.lowercased())\"" } ?? ""
        return WebSocketFrameEncoder.text("{\"type\":\"\(type)\"\(user),\"groups\":[\(list)]}")
    }

    public static func error(code: String, message: String) -> [UInt8] {
        WebSocketFrameEncoder.text("{\"type\":\"error\",\"code\":\(JSONString.quote(code)),\"message\":\(JSONString.quote(message))}")
    }
}
