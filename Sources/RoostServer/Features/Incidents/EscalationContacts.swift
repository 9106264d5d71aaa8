import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// The owner or an admin names someone outside the app for an escalation's level 2, by one
/// email address or one phone number. Exactly one message goes to that address now, with a
/// link to confirm; nothing else is ever sent to it before the link is used.
struct AddEscalationContact: GroupUseCase {
    let group: UUID
    let contact: NewOutsideContact
    /// How long the confirmation link works (the invitations' lifetime).
    let lifetime: Int
    let limits: AbuseLimits

    /// Contacts in one group, and contacts added to one group in a day.
    static let maxPerGroup = 10
    static let perGroupPerDay = 20

    init(group: UUID, name: String, email: String?, phone: String?, lifetime: Int, limits: AbuseLimits) throws(APIError) {
        contact = try NewOutsideContact(name: name, email: email, phone: phone)
        self.group = group
        self.lifetime = lifetime
        self.limits = limits
    }

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> OutsideContact {
        try caller.requireManager("only the owner and admins manage escalation contacts")
        let user = caller.user
        let groupName = try GroupStore().group(id: group, on: connection)?.name ?? ""
        let added = try contact.add(
            to: .escalation, owner: group, maxCount: (Self.maxPerGroup, "escalation contacts in a group"),
            ownerLimit: RateLimit(RateLimitKey(.escalationContactGroup, user.tenantID.uuidString, group.uuidString), limit: Self.perGroupPerDay,
                                  window: Throttle.day),
            tokenPrefix: TenantToken.escalationContact, lifetime: lifetime, template: .escalationContactConfirm,
            data: "\"group_name\":\(JSONString.quote(groupName)),\"added_by\":\(JSONString.quote(user.displayName))", by: user, limits: limits, on: connection)
        try Audit.record(caller, group: group, .escalationContactAdded, target: ("escalation_contact", added.id.lowercasedText),
                         data: "{\"channel\":\"\(added.email != nil ? "email" : "phone")\"}", on: connection)
        return added
    }
}

/// The owner or an admin lists the group's escalation contacts, oldest first, a page at a time.
struct ListEscalationContacts: GroupUseCase {
    let group: UUID
    let after: UUID?
    let limit: Int

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> [OutsideContact] {
        try caller.requireManager("only the owner and admins manage escalation contacts")
        return try OutsideContactStore.escalation.contacts(owner: group, after: after, limit: limit, on: connection)
    }
}

/// The owner or an admin removes an escalation contact: nothing more is sent to them.
struct RemoveEscalationContact: GroupUseCase {
    let group: UUID
    let contact: UUID

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws {
        try caller.requireManager("only the owner and admins manage escalation contacts")
        guard try OutsideContactStore.escalation.delete(contact, owner: group, on: connection) else {
            throw APIError(.notFound, code: .notFound, message: "no such escalation contact")
        }
        try Audit.record(caller, group: group, .escalationContactRemoved, target: ("escalation_contact", contact.lowercasedText),
                         on: connection)
    }
}

/// API.md "Incidents": a group's escalation contacts, and the link they confirm with (no
/// account needed: holding the token is the proof).
struct EscalationContactRoutes: Sendable {
    let auth: Authentication
    let lifetime: Int
    let limits: AbuseLimits

    func add(to builder: inout Router.Builder) {
        let pool = auth.pool
        builder.add(.post, "/v1/groups/{gid:uuid}/escalation-contacts", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(OutsideContactView.CreateBody.self)
            let add = try AddEscalationContact(group: context.parameters.uuid("gid")!, name: body.name, email: body.email, phone: body.phone,
                                               lifetime: lifetime, limits: limits)
            do {
                return try APIJSON.response(.created, OutsideContactView(contact: try await caller.run(add)))
            } catch let error as DatabaseError where error.code == .uniqueViolation {
                throw APIError(.conflict, code: .conflict, message: "that address is an escalation contact of the group already")
            }
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/escalation-contacts", signedIn: auth) { context, caller in
            let limit = try context.limit()
            let after = try context.cursorID()
            let contacts = try await caller.run(ListEscalationContacts(group: context.parameters.uuid("gid")!, after: after, limit: limit))
            return try APIJSON.response(.ok, Page(items: contacts.map(OutsideContactView.init),
                                                  next: contacts.count == limit ? contacts.last?.id.lowercasedText : nil))
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}/escalation-contacts/{cid:uuid}", signedIn: auth) { context, caller in
            try await caller.run(RemoveEscalationContact(group: context.parameters.uuid("gid")!, contact: context.parameters.uuid("cid")!))
            return HTTPResponse(status: .noContent)
        }
        OutsideContactView.addConfirmRoute("/v1/escalation-contacts/confirm", prefix: TenantToken.escalationContact, store: .escalation,
                                           pool: pool, to: &builder)
    }
}
