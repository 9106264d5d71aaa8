import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol

/// Check-in PINs (API.md "Check-ins"): a safe PIN and a duress PIN, 4–8 digits each, never
/// equal, hashed like passwords. Once a user has set them, completing or cancelling a check-in
/// takes one of them. The duress PIN is answered exactly like the safe one, while the server
/// raises a silent alert (`CheckinAlerts.duress`); a wrong PIN is counted like a failed
/// sign-in, so a phone taken from its owner cannot be used to try every PIN.
struct CheckinPins: Sendable {
    let auth: Authentication
    let credentials: Credentials

    /// How the walker answered.
    enum Answer: Sendable, Equatable {
        /// The user has set no PINs: nothing to check.
        case unprotected
        case safe
        case duress
    }

    static let digits = 4...8

    struct SetBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let safePin: String
        let duressPin: String
        /// Required to replace PINs already set (a session alone cannot switch off the duress PIN);
        /// `password` is its earlier name.
        let currentPassword: String?
        let password: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case currentPassword = "current_password"
            case password
            case safePin = "safe_pin"
            case duressPin = "duress_pin"
        }
    }

    /// `{pin?}`: the body of `complete` and `cancel` (which may also come without a body).
    struct AnswerBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = ["pin"]
        let pin: String?
    }

    static let required = APIError(.forbidden, code: .pinRequired, message: "a PIN is required to end this check-in", field: "pin")
    static let wrong = APIError(.forbidden, code: .wrongPIN, message: "that PIN is not right", field: "pin")

    static func validate(_ pin: String, field: String) throws(APIError) -> String {
        guard digits.contains(pin.utf8.count), pin.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw APIError.invalid("a PIN is 4 to 8 digits", field)
        }
        return pin
    }

    func add(to builder: inout Router.Builder) {
        let (credentials, pool) = (credentials, credentials.pool)
        builder.add(.put, "/v1/me/pins", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(SetBody.self)
            let (safe, duress) = (try Self.validate(body.safePin, field: "safe_pin"), try Self.validate(body.duressPin, field: "duress_pin"))
            guard safe != duress else { throw APIError.invalid("the duress PIN must differ from the safe PIN", "duress_pin") }
            let (user, existing) = try await caller.inTenant { user, connection in (user, try PinStore().pins(of: user.id, on: connection) != nil) }
            if existing { try await credentials.confirmPassword(body.currentPassword ?? body.password, of: user, context) }
            let (hasher, address) = (credentials.hasher, credentials.throttleAddress(context))
            let hashes = try await credentials.gate.run(address: address) { (hasher.hash(safe), hasher.hash(duress)) }
            try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) {
                    try PinStore().set(tenant: user.tenantID, user: user.id, safe: hashes.0, duress: hashes.1, on: $0)
                }
            }
            return HTTPResponse(status: .noContent)
        }
        builder.add(.delete, "/v1/me/pins", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(Credentials.CurrentPasswordBody.self)
            let user = try await caller.user()
            try await credentials.confirmPassword(body.given, of: user, context)
            let deleted = try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { try PinStore().delete(user: user.id, on: $0) }
            }
            guard deleted else { throw APIError(.notFound, code: .notFound, message: "no PINs are set") }
            return HTTPResponse(status: .noContent)
        }
    }

    /// What the request's `{pin}` says: `unprotected` when the caller has set no PINs (a PIN
    /// sent then is 400), 403 `pin_required` without one, 403 `wrong_pin` for another, 429 past
    /// the sign-in limit. Both hashes are always checked, so the safe and the duress PIN take
    /// the same time.
    func answer(_ context: RequestContext, _ caller: SignedIn) async throws -> Answer {
        try await verify(context.request.body.isEmpty ? nil : try context.decodeJSON(AnswerBody.self).pin, context, caller)
    }

    /// `answer` for a PIN that came in a larger body (`extend`'s `{due_in_s, pin}`).
    func verify(_ pin: String?, _ context: RequestContext, _ caller: SignedIn) async throws -> Answer {
        let (user, stored) = try await caller.inTenant { user, connection in (user, try PinStore().pins(of: user.id, on: connection)) }
        guard let stored else {
            if pin != nil { throw APIError.invalid("no PINs are set (PUT /v1/me/pins)", "pin") }
            return .unprotected
        }
        guard let pin else { throw Self.required }
        _ = try Self.validate(pin, field: "pin")
        let key = Digest.sha256(Array("pin:\(user.id.uuidString)".utf8))
        let (tenant, attempt) = (user.tenantID, UUID())
        try await credentials.serializer.run([RateLimitKey(.checkinPIN, Digest.hex(key))]) {
            try await credentials.pool.withConnection { connection in
                try connection.withTenantTransaction(tenant) { connection in
                    try Credentials.countAttempt(tenant: tenant, attempt: attempt, keys: [(key, Credentials.failuresPerIdentifier)],
                                                   refusal: "too many wrong PINs; try again later", on: connection)
                }
            }
        }
        let hasher = credentials.hasher
        let (safe, duress) = try await credentials.gate.run(address: credentials.throttleAddress(context)) {
            (hasher.verify(pin, against: stored.safe), hasher.verify(pin, against: stored.duress))
        }
        guard safe || duress else { throw Self.wrong }
        try await credentials.pool.withConnection { try $0.withTenantTransaction(tenant) { try LoginFailureStore().forget(attempt: attempt, on: $0) } }
        return duress ? .duress : .safe
    }
}
