import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// What adding, showing and confirming a contact outside the app share, whoever names them (a
/// group's managers their escalation contacts, a member their emergency contacts): one address,
/// checked; limits per owner and per address; exactly one message now, with the link to
/// confirm; nothing else ever sent to the address before the link is used.
struct NewOutsideContact: Sendable {
    let name: String
    let email: String?
    let phone: String?
    /// Confirmation messages to one address in a day, whoever adds it.
    static let perAddressPerDay = 3

    init(name: String, email: String?, phone: String?) throws(APIError) {
        self.name = try BoundedText.name(name, field: "name", range: 1...100)
        guard (email == nil) != (phone == nil) else { throw APIError.invalid("give exactly one of email and phone", "email") }
        (self.email, self.phone) = try ContactAddresses.validate(email: email, phone: phone)
    }

    /// Adds the contact to `store` under `owner` and queues the one confirmation message
    /// (`template`, with `data`'s fields and the link's `token`); `maxCount` contacts per owner (and what they are, for the 409),
    /// `ownerLimit` additions per owner (409 and 429 beyond).
    func add(to store: OutsideContactStore, owner: UUID, maxCount: (Int, String), ownerLimit: RateLimit, tokenPrefix: String, lifetime: Int,
             template: TemplateName, data: String, by user: User, limits: AbuseLimits, on connection: PostgresConnection) throws -> OutsideContact {
        let address = email ?? phone!
        if let phone { try Throttle.requireSMSAllowed(phone, tenant: user.tenantID, field: "phone", on: connection) }
        guard try store.count(owner: owner, on: connection) < maxCount.0 else {
            throw APIError(.conflict, code: .conflict, message: "at most \(maxCount.0) \(maxCount.1)")
        }
        try Throttle.count([
            ownerLimit,
            RateLimit(RateLimitKey(.contactAddress(template), user.tenantID.uuidString, address), limit: Self.perAddressPerDay, window: Throttle.day),
        ], "too many contacts added today; try again tomorrow", on: connection)
        try OutsideBudget.require(email != nil ? .email : .sms, to: address, tenant: user.tenantID, by: user, limits: limits, on: connection)
        let (text, token) = TenantToken.generate(tokenPrefix, tenant: user.tenantID)
        // The same address twice for one owner fails the insert (uniqueViolation; the route answers 409).
        let contact = try store.add(tenant: user.tenantID, owner: owner, name: name, email: email, phone: phone, tokenHash: token.hash,
                                    lifetime: lifetime, by: user.id, on: connection)
        let message = "{\"token\":\(JSONString.quote(text)),\"contact_name\":\(JSONString.quote(name)),\(data)}"
        try OutboxStore().enqueue(tenant: user.tenantID, email: email, phone: phone, template: template, data: RawJSON(message), on: connection)
        return contact
    }
}

/// An outside contact as the API shows it: `{id, name, email, phone, confirmed, created_at}`.
struct OutsideContactView: Encodable {
    @LowercaseID var id: UUID
    let name: String
    @Null var email: String?
    @Null var phone: String?
    let confirmed: Bool
    let createdAt: Date

    init(contact: OutsideContact) {
        (id, name, email, phone, confirmed, createdAt) = (contact.id, contact.name, contact.email, contact.phone, contact.confirmed, contact.createdAt)
    }

    enum CodingKeys: String, CodingKey {
        case id, name, email, phone, confirmed
        case createdAt = "created_at"
    }

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

    /// `POST path {token}`: no account needed, holding the link's token is the proof. 200 the
    /// contact, 410 used or expired, 404 for anything else.
    static func addConfirmRoute(_ path: String, prefix: String, store: OutsideContactStore, pool: ConnectionPool, to builder: inout Router.Builder) {
        builder.add(.post, path, bodyLimit: 4 * 1024) { context in
            let body = try context.decodeJSON(ConfirmBody.self)
            let unknown = APIError(.notFound, code: .notFound, message: "no such confirmation link")
            guard let token = TenantToken(body.token, prefix: prefix) else { throw unknown }
            let outcome = try await pool.withConnection { connection in
                try connection.withTenantTransaction(token.tenant) { try store.confirm(tokenHash: token.hash, on: $0) }
            }
            switch outcome {
            case .confirmed(let contact): return try APIJSON.response(.ok, OutsideContactView(contact: contact))
            case .gone: throw APIError(.gone, code: .expired, message: "this link was used already or has expired")
            case .unknown: throw unknown
            }
        }
    }
}
