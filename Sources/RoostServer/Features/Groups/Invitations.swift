import Foundation
import RoostPersistence
import RoostProtocol

/// The owner or an admin invites someone by email or phone number (only the owner makes
/// admins). The token leaves only through the outbox, to the invited address; an addressee
/// who already has that address verified also hears of it on their streams.
struct InviteMember: GroupUseCase {
    let group: UUID
    let email: String?
    let phone: String?
    let role: Role
    let lifetime: Int
    let limits: AbuseLimits

    init(group: UUID, email: String?, phone: String?, role: String?, lifetime: Int, limits: AbuseLimits) throws(APIError) {
        guard (email == nil) != (phone == nil) else { throw APIError.invalid("give exactly one of email and phone", "email") }
        (self.email, self.phone) = try ContactAddresses.validate(email: email, phone: phone)
        let role = role.map(Role.init) ?? .member
        guard role == .member || role == .admin else { throw APIError.invalid("role must be member or admin", "role") }
        self.group = group
        self.role = role
        self.lifetime = lifetime
        self.limits = limits
    }

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> Invitation {
        try caller.requireManager("only the owner and admins can invite")
        if role == .admin && !caller.isOwner {
            throw APIError(.forbidden, code: .forbidden, message: "only the owner can make an admin", field: "role")
        }
        let user = caller.user
        let tenant = user.tenantID.uuidString
        let address = email ?? phone!
        if try ModerationStore().isBlocked(group: group, email: email, phone: phone, on: connection) {
            throw APIError(.forbidden, code: .forbidden, message: "that person was blocked from this group", field: email != nil ? "email" : "phone")
        }
        if let phone { try Throttle.requireSMSAllowed(phone, tenant: user.tenantID, field: "phone", on: connection) }
        try Throttle.count([
            RateLimit(RateLimitKey(.inviteSender, tenant, user.id.uuidString), limit: limits.invitationsPerSenderPerDay, window: Throttle.day),
            RateLimit(RateLimitKey(.inviteRecipient, tenant, address), limit: limits.invitationsPerRecipientPerDay, window: Throttle.day),
            RateLimit(RateLimitKey(.inviteGroup, tenant, group.uuidString), limit: limits.invitationsPerGroupPerDay, window: Throttle.day),
        ], "too many invitations today; try again tomorrow", on: connection)
        try OutsideBudget.require(email != nil ? .email : .sms, to: address, tenant: user.tenantID, by: user, limits: limits, on: connection)
        let (text, token) = TenantToken.generate(TenantToken.invitation, tenant: user.tenantID)
        let store = InvitationStore()
        if try store.isMember(email: email, phone: phone, group: group, on: connection) {
            throw APIError(.conflict, code: .conflict, message: "that person is already a member")
        }
        // A pending invitation to the same address fails the insert (uniqueViolation; the route answers 409).
        let invitation = try store.create(tenant: user.tenantID, group: group, email: email, phone: phone, role: role.name, tokenHash: token.hash,
                                          invitedBy: user.id, lifetime: lifetime, on: connection)
        let groupName = try GroupStore().group(id: group, on: connection)?.name ?? ""
        let data = "{\"token\":\(JSONString.quote(text)),\"group_name\":\(JSONString.quote(groupName)),"
            + "\"inviter\":\(JSONString.quote(user.displayName)),\"inviter_id\":\"\(user.id.lowercasedText)\","
            + "\"invitation_id\":\"\(invitation.id.lowercasedText)\",\"to\":\(JSONString.quote(address))}"
        try OutboxStore().enqueue(tenant: user.tenantID, email: email, phone: phone, template: .invitation, data: RawJSON(data), on: connection)
        try Self.announce(invitation, groupName: groupName, tenant: user.tenantID, on: connection)
        try Audit.record(caller, group: group, .invitationSent, target: ("invitation", invitation.id.lowercasedText),
                         data: "{\"channel\":\"\(email != nil ? "email" : "phone")\",\"role\":\"\(role.name)\"}", on: connection)
        return invitation
    }

    /// An addressee who already has an account with that address verified hears of the
    /// invitation at once: an `invitation.received` notice on their streams, carrying the item
    /// `GET /v1/invitations` lists (sent only if the transaction commits).
    static func announce(_ invitation: Invitation, groupName: String, tenant: UUID, on connection: PostgresConnection) throws {
        guard let addressee = try UserStore().find(email: invitation.email, phone: invitation.phone, on: connection),
              invitation.email != nil ? addressee.emailVerified : addressee.phoneVerified
        else { return }
        let data = String(decoding: try APIJSON.encode(InvitationRoutes.AddressedView(invitation: invitation, groupName: groupName)), as: UTF8.self)
        try GroupEventLog.notifyUser(tenant: tenant, user: addressee.id, event: .invitationReceived, data: data, on: connection)
    }
}

/// The owner or an admin withdraws a pending invitation.
struct RevokeInvitation: GroupUseCase {
    let group: UUID
    let invitation: UUID

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws {
        try caller.requireManager("only the owner and admins revoke invitations")
        guard try InvitationStore().revoke(invitation, group: group, on: connection) else {
            throw APIError(.notFound, code: .notFound, message: "no such pending invitation")
        }
        try Audit.record(caller, group: group, .invitationRevoked, target: ("invitation", invitation.lowercasedText), on: connection)
    }
}

/// A signed-in user accepts an invitation, by its token (from the link) or by its id when it
/// is addressed to one of their verified addresses, and joins the group with its role.
struct RedeemInvitation: UserUseCase {
    enum Reference: Sendable {
        case token([UInt8])
        case id(UUID)
    }

    let reference: Reference

    /// The group joined and the role in it.
    func run(by user: User, on connection: PostgresConnection) throws -> (WatchGroup, Role) {
        let invitation: Invitation
        switch reference {
        case .token(let hash):
            guard let found = try InvitationStore().find(tokenHash: hash, on: connection) else { throw APIError.noSuchInvitation }
            invitation = found
        case .id(let id):
            invitation = try Self.addressed(to: user, id: id, on: connection)
        }
        try InvitationJoin.requireOpen(invitation)
        if try GroupStore().role(of: user.id, in: invitation.groupID, on: connection) != nil {
            throw APIError(.conflict, code: .conflict, message: "you are already a member of this group")
        }
        try InvitationJoin.join(invitation, user: user, on: connection)
        return (try GroupStore().group(id: invitation.groupID, on: connection)!, Role(invitation.role))
    }

    /// The invitation with this id if it is addressed to one of the user's verified addresses;
    /// otherwise 404, whether or not it exists.
    static func addressed(to user: User, id: UUID, on connection: PostgresConnection) throws -> Invitation {
        guard let invitation = try InvitationStore().find(id: id, on: connection),
              (invitation.email != nil && user.emailVerified && invitation.email == user.email)
                || (invitation.phone != nil && user.phoneVerified && invitation.phone == user.phone) else { throw APIError.noSuchInvitation }
        return invitation
    }
}

/// The addressee declines a pending invitation addressed to them.
struct DeclineInvitation: UserUseCase {
    let invitation: UUID

    func run(by user: User, on connection: PostgresConnection) throws {
        let invitation = try RedeemInvitation.addressed(to: user, id: invitation, on: connection)
        try InvitationJoin.requireOpen(invitation)
        try InvitationStore().markDeclined(invitation.id, on: connection)
    }
}

extension APIError {
    static let noSuchInvitation = APIError(.notFound, code: .notFound, message: "no such invitation")
}
