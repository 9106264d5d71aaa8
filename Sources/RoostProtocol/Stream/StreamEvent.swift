import Foundation

/// One event of a group's log as the stream sends it (API.md "The stream"): `at` already
/// RFC 3339 text and `data` JSON text, so framing it is concatenation.
///
/// This type owns the event frame's JSON. The database assembles the same bytes when it
/// announces an event (it alone knows the seq before the round trip ends), from `frameParts`.
public struct StreamEvent: Sendable, Equatable {
    public let group: UUID
    public let seq: Int64
    public let event: GroupEventKind
    public let at: String
    public let data: String
    /// The member a membership event is about (whose joining or leaving changes who may see
    /// what follows), as the log stores it beside the data; nil for other events.
    public let subject: UUID?
    /// The one user whose streams do not get this event (a duress alert's walker), or
    /// `Audience.managersOnly`; nil for most.
    public let hiddenFrom: UUID?
    /// With `Audience.managersOnly`: the group's managers as the log was read, the only users
    /// whose streams get it.
    public let audience: [UUID]?

    public init(group: UUID, seq: Int64, event: GroupEventKind, at: String, data: String, subject: UUID? = nil, hiddenFrom: UUID? = nil,
                audience: [UUID]? = nil) {
        self.group = group
        self.seq = seq
        self.event = event
        self.at = at
        self.data = data
        self.subject = subject
        self.hiddenFrom = hiddenFrom
        self.audience = audience
    }

    /// `{"type":"event","group_id","seq","event","at","data"}`.
    public var frameJSON: String {
        let parts = Self.frameParts(group: group, event: event)
        return parts.beforeSeq + String(seq) + parts.beforeAt + at + parts.beforeData + data + "}"
    }

    /// The event as `GET /v1/groups/{gid}/events` lists it: the frame without its `type`.
    public var itemJSON: String {
        "{\"group_id\":\"\(group.lowercasedText)\",\"seq\":\(seq),\"event\":\(JSONString.quote(event.name)),"
            + "\"at\":\(JSONString.quote(at)),\"data\":\(data)}"
    }

    /// The frame around its seq, its time and its data, for the statement that appends an
    /// event to assemble: `beforeSeq + seq + beforeAt + at + beforeData + data + "}"`.
    public static func frameParts(group: UUID, event: GroupEventKind) -> (beforeSeq: String, beforeAt: String, beforeData: String) {
        ("{\"type\":\"event\",\"group_id\":\"\(group.lowercasedText)\",\"seq\":",
         ",\"event\":\(JSONString.quote(event.name)),\"at\":\"",
         "\",\"data\":")
    }

    /// The `event` name in a frame built by `frameJSON` (the first `"event":"` key: `type`,
    /// `group_id` and `seq` before it hold no such text).
    public static func kind(inFrame frame: Substring) -> GroupEventKind? {
        guard let start = frame.range(of: "\"event\":\"") else { return nil }
        let rest = frame[start.upperBound...]
        return rest.firstIndex(of: "\"").map { GroupEventKind(String(rest[..<$0])) }
    }
}

/// The stream's other server frames (API.md "The stream"), as JSON text.
public enum StreamFrameJSON {
    /// `{"type":"notice","event":..,"data":..}`: something about the user, not a group's log.
    public static func notice(_ kind: NoticeKind, data: String) -> String {
        "{\"type\":\"notice\",\"event\":\(JSONString.quote(kind.name)),\"data\":\(data)}"
    }

    /// The `group.removed` notice for a group the user is no longer in.
    public static func groupRemoved(_ group: UUID, reason: String) -> String {
        notice(.groupRemoved, data: "{\"group_id\":\"\(group.lowercasedText)\",\"reason\":\(JSONString.quote(reason))}")
    }

    /// `{"type":"ready"|"resumed", [user_id], "groups":[{"id","last_seq"}]}`.
    public static func groups(type: String, userID: UUID?, _ groups: [(UUID, Int64)]) -> String {
        let list = groups.map { "{\"id\":\"\($0.0.lowercasedText)\",\"last_seq\":\($0.1)}" }.joined(separator: ",")
        let user = userID.map { ",\"user_id\":\"\($0.lowercasedText)\"" } ?? ""
        return "{\"type\":\"\(type)\"\(user),\"groups\":[\(list)]}"
    }

    /// `{"type":"reset","group_id","oldest_seq"}`: a resume's cursor for the group fell behind what
    /// retention keeps; events from `oldest_seq` on follow.
    public static func reset(_ group: UUID, oldestSeq: Int64) -> String {
        "{\"type\":\"reset\",\"group_id\":\"\(group.lowercasedText)\",\"oldest_seq\":\(oldestSeq)}"
    }

    public static func error(code: APIError.Code, message: String) -> String {
        "{\"type\":\"error\",\"code\":\(JSONString.quote(code.text)),\"message\":\(JSONString.quote(message))}"
    }
}
