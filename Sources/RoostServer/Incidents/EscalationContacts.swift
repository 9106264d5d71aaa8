import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// The owner or an admin names someone outside the app for an escalation's level 2, by one
/// email address or one phone number. Exactly one message goes to that address now, with a
/// link to confirm; nothing else is ever sent to it before the link is used.
struct AddEscalationContact: GroupUseCase {
    let group: UUID
    let name: String
    let email: String?
    let phone: String?
    /// How long the confirmation link works (the invitations' lifetime).
    let lifetime: Int

    /// Contacts in one group.
    static let maxPerGroup = 10
    /// Contacts added to one group in a day, and confirmation messages to one address in a day.
    static let perGroupPerDay = 20
    static let perAddressPerDay = 3

    init(group: UUID, name: String, email: String?, phone: String?, lifetime: Int) throws(APIError) {
        self.name = try BoundedText.validate(name, field: "name", range: 1...100)
        guard (email == nil) != (phone == nil) else { throw APIError.invalid("give exactly one of email and phone", "email") }
        (self.email, self.phone) = try ContactAddresses.validate(email: email, phone: phone)
        self.group = group
        self.lifetime = lifetime
    }

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> EscalationContact {
        try caller.requireManager("only the owner and admins manage escalation contacts")
        let (user, store) = (caller.user, EscalationStore())
        let address = email ?? phone!
        if let phone { try Throttle.requireSMSAllowed(phone, tenant: user.tenantID, field: "phone", on: connection) }
        guard try store.contactCount(group: group, on: connection) < Self.maxPerGroup else {
            throw APIError(.conflict, code: "conflict", message: "a group has at most \(Self.maxPerGroup) escalation contacts")
        }
        let tenant = user.tenantID.uuidString
        try Throttle.count([
            RateLimit("escalation-contact-group:\(tenant):\(group.uuidString)", limit: Self.perGroupPerDay, window: Throttle.day),
            RateLimit("escalation-contact-address:\(tenant):\(address)", limit: Self.perAddressPerDay, window: Throttle.day),
        ], "too many escalation contacts added today; try again tomorrow", on: connection)
        let (text, token) = TenantToken.generate(TenantToken.escalationContact, tenant: user.tenantID)
        // The same address twice in the group fails the insert (uniqueViolation; the route answers 409).
        let contact = try store.addContact(tenant: user.tenantID, group: group, name: name, email: email, phone: phone, tokenHash: token.hash,
                                           lifetime: lifetime, by: user.id, on: connection)
        let groupName = try GroupStore().group(id: group, on: connection)?.name ?? ""
        let data = "{\"token\":\(JSONString.quote(text)),\"contact_name\":\(JSONString.quote(name)),"
            + "\"group_name\":\(JSONString.quote(groupName)),\"added_by\":\(JSONString.quote(user.displayName))}"
        try OutboxStore().enqueue(tenant: user.tenantID, email: email, phone: phone, template: "escalation_contact_confirm",
                                  data: RawJSON(data), on: connection)
        return contact
    }
}

/// The owner or an admin lists the group's escalation contacts, oldest first, a page at a time.
struct ListEscalationContacts: GroupUseCase {
    let group: UUID
    let after: UUID?
    let limit: Int

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> [EscalationContact] {
        try caller.requireManager("only the owner and admins manage escalation contacts")
        return try EscalationStore().contacts(group: group, after: after, limit: limit, on: connection)
    }
}

/// The owner or an admin removes an escalation contact: nothing more is sent to them.
struct RemoveEscalationContact: GroupUseCase {
    let group: UUID
    let contact: UUID

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws {
        try caller.requireManager("only the owner and admins manage escalation contacts")
        guard try EscalationStore().deleteContact(contact, group: group, on: connection) else {
            throw APIError(.notFound, code: "not_found", message: "no such escalation contact")
        }
    }
}

/// API.md "Incidents": a group's escalation contacts, and the link they confirm with (no
/// account needed: holding the token is the proof).
struct EscalationContactRoutes: Sendable {
    let auth: Authentication
    let lifetime: Int

    struct CreateBody: Decodable, KnownFields {
        let name: String
        let email: String?
        let phone: String?
        static let fieldNames: Set<String> = ["name", "email", "phone"]
    }

    struct ConfirmBody: Decodable, KnownFields {
        let token: String
        static let fieldNames: Set<String> = ["token"]
    }

    struct ContactView: Encodable {
        let contact: EscalationContact

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(contact.id.uuidString.lowercased(), forKey: .id)
            try container.encode(contact.name, forKey: .name)
            try container.encode(contact.email, forKey: .email)
            try container.encode(contact.phone, forKey: .phone)
            try container.encode(contact.confirmed, forKey: .confirmed)
            try container.encode(contact.createdAt, forKey: .createdAt)
        }

        enum CodingKeys: String, CodingKey {
            case id, name, email, phone, confirmed
            case createdAt = "created_at"
        }
    }

    func add(to builder: inout Router.Builder) {
        let pool = auth.pool
        builder.add(.post, "/v1/groups/{gid:uuid}/escalation-contacts", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(CreateBody.self)
            let add = try AddEscalationContact(group: context.parameters.uuid("gid")!, name: body.name, email: body.email, phone: body.phone,
                                               lifetime: lifetime)
            do {
                return try APIJSON.response(.created, ContactView(contact: try await caller.run(add)))
            } catch let error as DatabaseError where error.code == .uniqueViolation {
                throw APIError(.conflict, code: "conflict", message: "that address is an escalation contact of the group already")
            }
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/escalation-contacts", signedIn: auth) { context, caller in
            let limit = try context.limit()
            let after = try context.cursorID()
            let contacts = try await caller.run(ListEscalationContacts(group: context.parameters.uuid("gid")!, after: after, limit: limit))
            return try APIJSON.response(.ok, Page(items: contacts.map(ContactView.init),
                                                  next: contacts.count == limit ? contacts.last?.id.uuidString.lowercased() : nil))
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}/escalation-contacts/{cid:uuid}", signedIn: auth) { context, caller in
            try await caller.run(RemoveEscalationContact(group: context.parameters.uuid("gid")!, contact: context.parameters.uuid("cid")!))
            return HTTPResponse(status: .noContent)
        }
        builder.add(.post, "/v1/escalation-contacts/confirm", bodyLimit: 4 * 1024) { context in
            let body = try context.decodeJSON(ConfirmBody.self)
            let unknown = APIError(.notFound, code: "not_found", message: "no such confirmation link")
            guard let token = TenantToken(body.token, prefix: TenantToken.escalationContact) else { throw unknown }
            let outcome = try await pool.withConnection { connection in
                try connection.withTenantTransaction(token.tenant) { try EscalationStore().confirm(tokenHash: token.hash, on: $0) }
            }
            switch outcome {
            case .confirmed(let contact): return try APIJSON.response(.ok, ContactView(contact: contact))
            case .gone: throw APIError(.gone, code: "expired", message: "this link was used already or has expired")
            case .unknown: throw unknown
            }
        }
    }
}
