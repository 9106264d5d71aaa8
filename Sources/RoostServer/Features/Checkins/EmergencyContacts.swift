import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// A member names someone outside the app to watch their check-ins (`contact_ids`): one email
/// address or phone number, sent exactly one message now with a link to confirm, and nothing
/// else before confirming; once confirmed, told of a missed check-in or a call for help with a
/// link to its status page, and given the all clear after.
struct AddEmergencyContact: UserUseCase {
    let contact: NewOutsideContact
    let lifetime: Int
    let limits: AbuseLimits

    static let maxPerUser = 5
    static let perUserPerDay = 10

    init(name: String, email: String?, phone: String?, lifetime: Int, limits: AbuseLimits) throws(APIError) {
        contact = try NewOutsideContact(name: name, email: email, phone: phone)
        self.lifetime = lifetime
        self.limits = limits
    }

    func run(by user: User, on connection: PostgresConnection) throws -> OutsideContact {
        try contact.add(
            to: .emergency, owner: user.id, maxCount: (Self.maxPerUser, "emergency contacts"),
            ownerLimit: RateLimit(RateLimitKey(.emergencyContactUser, user.tenantID.uuidString, user.id.uuidString), limit: Self.perUserPerDay,
                                  window: Throttle.day),
            tokenPrefix: TenantToken.emergencyContact, lifetime: lifetime, template: .emergencyContactConfirm,
            data: "\"added_by\":\(JSONString.quote(user.displayName))", by: user, limits: limits, on: connection)
    }
}

/// API.md "Check-ins" (extended): a member's emergency contacts, the link they confirm with, and
/// the status page a told contact follows.
struct EmergencyContactRoutes: Sendable {
    let auth: Authentication
    /// How long a confirmation link works (the invitations' lifetime).
    let lifetime: Int
    let limits: AbuseLimits

    /// A contact's view of the check-in they were told about.
    struct StatusView: Encodable {
        let page: CheckinStatusPage

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            let location = try page.location.map { try JSONDecoder().decode(Location.self, from: Data($0.utf8)) }
            try container.encode(page.name, forKey: .name)
            try container.encode(page.status, forKey: .status)
            try container.encode(location, forKey: .lastLocation)
            try container.encode(location.map { "https://www.openstreetmap.org/?mlat=\($0.lat)&mlon=\($0.lon)#map=17/\($0.lat)/\($0.lon)" },
                                 forKey: .mapURL)
            try container.encode(page.battery, forKey: .battery)
            try container.encode(page.locationAt, forKey: .at)
            try container.encode(page.alertStatus, forKey: .alertStatus)
        }

        enum CodingKeys: String, CodingKey {
            case name, status, battery, at
            case lastLocation = "last_location"
            case mapURL = "map_url"
            case alertStatus = "alert_status"
        }
    }

    func add(to builder: inout Router.Builder) {
        let pool = auth.pool
        builder.add(.post, "/v1/me/emergency-contacts", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(OutsideContactView.CreateBody.self)
            let add = try AddEmergencyContact(name: body.name, email: body.email, phone: body.phone, lifetime: lifetime, limits: limits)
            do {
                return try APIJSON.response(.created, OutsideContactView(contact: try await caller.run(add)))
            } catch let error as DatabaseError where error.code == .uniqueViolation {
                throw APIError(.conflict, code: .conflict, message: "that address is one of your emergency contacts already")
            }
        }
        builder.add(.get, "/v1/me/emergency-contacts", signedIn: auth) { context, caller in
            let (limit, after) = (try context.limit(), try context.cursorID())
            let contacts = try await caller.inTenant { user, connection in
                try OutsideContactStore.emergency.contacts(owner: user.id, after: after, limit: limit, on: connection)
            }
            return try APIJSON.response(.ok, Page(items: contacts.map(OutsideContactView.init),
                                                  next: contacts.count == limit ? contacts.last?.id.lowercasedText : nil))
        }
        builder.add(.delete, "/v1/me/emergency-contacts/{id:uuid}", signedIn: auth) { context, caller in
            let id = context.parameters.uuid("id")!
            let deleted = try await caller.inTenant { user, connection in try OutsideContactStore.emergency.delete(id, owner: user.id, on: connection) }
            guard deleted else { throw APIError(.notFound, code: .notFound, message: "no such emergency contact") }
            return HTTPResponse(status: .noContent)
        }
        OutsideContactView.addConfirmRoute("/v1/emergency-contacts/confirm", prefix: TenantToken.emergencyContact, store: .emergency,
                                           pool: pool, to: &builder)
        builder.add(.get, "/v1/public/checkins/{token}") { context in
            let unknown = APIError(.notFound, code: .notFound, message: "no such check-in, or its page has expired")
            guard let token = TenantToken(context.parameters["token"] ?? "", prefix: TenantToken.checkinStatus) else { throw unknown }
            let page = try await pool.withConnection { connection in
                try connection.withTenantTransaction(token.tenant) { try CheckinStore().statusPage(tokenHash: token.hash, on: $0) }
            }
            guard let page else { throw unknown }
            var response = try APIJSON.response(.ok, StatusView(page: page))
            response.headers.add("Cache-Control", "no-store")
            return response
        }
    }
}
