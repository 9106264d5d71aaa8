/// The `template` of a message to a person outside the app (API.md "Delivery"): the file under
/// `templates/<locale>/` that renders it, and the web app route its link opens. An open set, like
/// `GroupEventKind`: a row written by a newer node still reads, a misspelt name does not compile.
public struct TemplateName: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }

    public static let addressChangeRequested = TemplateName("address_change_requested")
    public static let addressChanged = TemplateName("address_changed")
    public static let alert = TemplateName("alert")
    public static let alertClosed = TemplateName("alert_closed")
    /// The alerts held back from one person within an hour, in one message.
    public static let alertDigest = TemplateName("alert_digest")
    public static let alertEscalated = TemplateName("alert_escalated")
    public static let alertResponse = TemplateName("alert_response")
    /// A bridge's offline and online notices of an hour, in one email to a manager.
    public static let bridgeDigest = TemplateName("bridge_digest")
    public static let bridgeOffline = TemplateName("bridge_offline")
    public static let bridgeOnline = TemplateName("bridge_online")
    public static let chat = TemplateName("chat")
    public static let checkinAlert = TemplateName("checkin_alert")
    public static let checkinAllClear = TemplateName("checkin_all_clear")
    public static let checkinPrompt = TemplateName("checkin_prompt")
    public static let checkinRequest = TemplateName("checkin_request")
    public static let checkinRequestAnswered = TemplateName("checkin_request_answered")
    public static let checkinRequestExpired = TemplateName("checkin_request_expired")
    public static let emergencyContactConfirm = TemplateName("emergency_contact_confirm")
    public static let escalationContactConfirm = TemplateName("escalation_contact_confirm")
    public static let invitation = TemplateName("invitation")
    public static let passwordChanged = TemplateName("password_changed")
    public static let passwordReset = TemplateName("password_reset")
    public static let registrationAttempted = TemplateName("registration_attempted")
    /// The operator invites someone to register in an invite-only tenant (its link opens the
    /// web app's invitation screen).
    public static let tenantInvitation = TemplateName("tenant_invitation")
    /// A member reported a message: to the group's managers' devices.
    public static let reportCreated = TemplateName("report_created")
    public static let verification = TemplateName("verification")

    public var description: String { name }
}

/// How an outbox message leaves (API.md "Delivery"): `email`, `sms` or `push`.
public struct OutboxChannel: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }

    public static let email = OutboxChannel("email")
    public static let sms = OutboxChannel("sms")
    public static let push = OutboxChannel("push")

    public var description: String { name }
}
