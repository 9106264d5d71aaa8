import RoostPersistence
import RoostProtocol

/// What a throttle counts: a kind, one of the `static let`s below, and the parts that say
/// whose count it is (a tenant, a user, an address). The key's text, which `RateLimit` hashes
/// into `rate_limits`, is written only here, so no two throttles share a kind by a typo.
struct RateLimitKey: Hashable, Sendable, CustomStringConvertible {
    struct Kind: Hashable, Sendable {
        let name: String
        private init(_ name: String) { self.name = name }

        // Accounts: sign-up, sign-in, resets and contact codes, per address or per account.
        static let register = Kind("register")
        static let loginUnknownTenant = Kind("login-unknown-tenant")
        static let signInAddress = Kind("sign-in-address")
        static let signInIdentifier = Kind("sign-in-id")
        static let signInAccount = Kind("sign-in-account")
        static let passwordReset = Kind("password-reset")
        static let passwordResetIdentifier = Kind("password-reset-id")
        static let passwordResetWrong = Kind("password-reset-wrong")
        static let verifySend = Kind("verify-send")
        static let export = Kind("export")
        static let checkinPIN = Kind("pin")
        // Groups and what members do in them.
        static let groupCreate = Kind("group-create")
        static let inviteSender = Kind("invite-sender")
        static let inviteRecipient = Kind("invite-recipient")
        static let inviteGroup = Kind("invite-group")
        static let alert = Kind("alert")
        static let chatPush = Kind("chat-push")
        static let alertResponse = Kind("alert-response")
        static let alertStatus = Kind("alert-status")
        static let checkinRequestSent = Kind("checkin-request-sent")
        static let checkinRequestReceived = Kind("checkin-request-received")
        static let reportSent = Kind("report-sent")
        static let reportPush = Kind("report-push")
        // People outside the app: contacts, escalations, bridges' notices, the day budgets.
        static let emergencyContactUser = Kind("emergency-contact-user")
        /// Messages to one emergency contact, counted per hour and per day (the last part).
        static let emergencyContact = Kind("emergency-contact")
        static let escalationContactGroup = Kind("escalation-contact-group")
        static let escalationContact = Kind("escalation-contact")
        static let escalationPush = Kind("escalation-push")
        static let bridgeNotice = Kind("bridge-notice")
        static let outsideDestination = Kind("outside-destination")
        static let outsideAccount = Kind("outside-account")
        static let outsideTenant = Kind("outside-tenant")

        /// Additions of one address as a contact, per kind of contact (its confirmation's template).
        static func contactAddress(_ template: TemplateName) -> Kind { Kind(template.name) }
    }

    let kind: Kind
    let parts: [String]

    init(_ kind: Kind, _ parts: any CustomStringConvertible...) {
        self.kind = kind
        self.parts = parts.map(\.description)
    }

    var description: String { ([kind.name] + parts).joined(separator: ":") }
}

extension RateLimit {
    init(_ key: RateLimitKey, limit: Int, window: Int) {
        self.init(key.description, limit: limit, window: window)
    }
}
