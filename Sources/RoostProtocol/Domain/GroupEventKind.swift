/// The `event` name of a group's log entry (API.md "Events"). An open set on the wire, like an
/// opcode, so a struct over the name with the kinds Roost writes as `static let` members: a
/// misspelt kind is a compile error, and a kind written by a newer node still decodes.
public struct GroupEventKind: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }

    public static let messageCreated = GroupEventKind("message.created")
    public static let messageRedacted = GroupEventKind("message.redacted")
    public static let alertAcknowledged = GroupEventKind("alert.acknowledged")
    public static let alertClosed = GroupEventKind("alert.closed")
    public static let alertReopened = GroupEventKind("alert.reopened")
    public static let alertRepeated = GroupEventKind("alert.repeated")
    /// An open red alert nobody is coming to went up a level (API.md "Incidents").
    public static let alertEscalated = GroupEventKind("alert.escalated")
    /// An official warning's alert changed in place (its publisher's `Update`: text, severity,
    /// details), API.md "Group areas and CAP".
    public static let alertUpdated = GroupEventKind("alert.updated")
    public static let memberJoined = GroupEventKind("member.joined")
    public static let memberLeft = GroupEventKind("member.left")
    public static let memberRemoved = GroupEventKind("member.removed")
    public static let memberRoleChanged = GroupEventKind("member.role_changed")
    public static let groupUpdated = GroupEventKind("group.updated")
    /// A member's walk the group watches began ("Ann is walking home, due 23:40"), got a new
    /// deadline, ended safely (checked in, or arrived), or was called off (API.md "Check-ins").
    public static let checkinStarted = GroupEventKind("checkin.started")
    public static let checkinExtended = GroupEventKind("checkin.extended")
    public static let checkinCompleted = GroupEventKind("checkin.completed")
    public static let checkinCancelled = GroupEventKind("checkin.cancelled")

    /// Whether the event starts or ends someone's membership, which changes who may see the
    /// group's later events (the fanout acts on these three).
    public var changesMembership: Bool { self == .memberJoined || endsMembership }
    /// The member the event is about is no longer in the group.
    public var endsMembership: Bool { self == .memberLeft || self == .memberRemoved }

    public var description: String { name }
}

/// The `event` name of a notice (API.md "The stream": `{"type":"notice",...}`), which is about
/// the user rather than a group's log and has no seq.
public struct NoticeKind: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }

    public static let groupRemoved = NoticeKind("group.removed")
    public static let bridgeOffline = NoticeKind("bridge.offline")
    public static let bridgeOnline = NoticeKind("bridge.online")
    public static let invitationReceived = NoticeKind("invitation.received")
    /// The user's read marker in a group moved (from another of their devices).
    public static let readUpdated = NoticeKind("read.updated")
    /// A live sharer of an alert moved (to the group's streams, at most one per sharer per 2 s).
    public static let locationUpdated = NoticeKind("location.updated")
    /// A live sharer stopped: the alert closed, or an hour without an update.
    public static let locationEnded = NoticeKind("location.ended")
    /// The walker's check-in reached its deadline (or they stood still too long): "are you OK?"
    /// to their own streams, beside the critical push to their devices.
    public static let checkinPrompt = NoticeKind("checkin.prompt")
    /// A walk the group watches moved: a new point of its trail (at most one per walk every
    /// 15 s), to the watching groups' streams.
    public static let checkinMoved = NoticeKind("checkin.moved")
    /// A co-member asks "are you OK?" (to the addressee's streams).
    public static let checkinRequestReceived = NoticeKind("checkin_request.received")
    /// The addressee answered (to the requester's streams).
    public static let checkinRequestAnswered = NoticeKind("checkin_request.answered")
    /// No answer came in time (to the requester's streams, with the place if shared).
    public static let checkinRequestExpired = NoticeKind("checkin_request.expired")
    /// A member reported a message (to the group's owner, admins and the tenant's coordinators).
    public static let reportCreated = NoticeKind("report.created")

    public var description: String { name }
}
