/// What a manager did, as a group's audit log records it (API.md "Accounts":
/// `GET /v1/groups/{gid}/audit`, `action`). An open set, like `GroupEventKind`.
public struct AuditAction: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }

    public static let alertClosed = AuditAction("alert.closed")
    public static let alertReopened = AuditAction("alert.reopened")
    public static let bridgeChanged = AuditAction("bridge.changed")
    public static let bridgeCreated = AuditAction("bridge.created")
    public static let bridgeRevoked = AuditAction("bridge.revoked")
    public static let escalationContactAdded = AuditAction("escalation_contact.added")
    public static let escalationContactRemoved = AuditAction("escalation_contact.removed")
    public static let groupAreaChanged = AuditAction("group.area_changed")
    /// The owner made, replaced or removed the token that reads the group's alerts as CAP.
    public static let groupCAPTokenChanged = AuditAction("group.cap_token_changed")
    public static let groupDeleted = AuditAction("group.deleted")
    public static let groupUpdated = AuditAction("group.updated")
    public static let invitationRevoked = AuditAction("invitation.revoked")
    public static let invitationSent = AuditAction("invitation.sent")
    public static let memberBlocked = AuditAction("member.blocked")
    public static let memberMuted = AuditAction("member.muted")
    public static let memberUnmuted = AuditAction("member.unmuted")
    public static let memberRemoved = AuditAction("member.removed")
    public static let memberRoleChanged = AuditAction("member.role_changed")
    public static let messageRedacted = AuditAction("message.redacted")
    public static let reportClosed = AuditAction("report.closed")
    public static let templatesReplaced = AuditAction("templates.replaced")

    /// Every action Roost records (openapi.yaml's enum of the audit's `action` lists the same).
    public static let all: [AuditAction] = [
        .alertClosed, .alertReopened, .bridgeChanged, .bridgeCreated, .bridgeRevoked, .escalationContactAdded,
        .escalationContactRemoved, .groupAreaChanged, .groupCAPTokenChanged, .groupDeleted, .groupUpdated, .invitationRevoked,
        .invitationSent, .memberBlocked, .memberMuted, .memberUnmuted, .memberRemoved, .memberRoleChanged,
        .messageRedacted, .reportClosed, .templatesReplaced,
    ]

    public var description: String { name }
}
