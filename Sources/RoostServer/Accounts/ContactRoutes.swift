import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Accounts": proving an email address or phone number with a 6-digit code sent through
/// the outbox. Codes are stored hashed, live 10 minutes and allow 5 tries; a new code can be
/// asked for once a minute (each send costs the tenant an email or SMS).
struct ContactRoutes: Sendable {
    let auth: Authentication
    let limits: AbuseLimits
    static let codeLifetime = 600
    static let maxAttempts = 5
    static let resendInterval = 60

    struct VerifyBody: Decodable, KnownFields {
        let channel: String
        static let fieldNames: Set<String> = ["channel"]
    }

    struct ConfirmBody: Decodable, KnownFields {
        let channel: String
        let code: String
        static let fieldNames: Set<String> = ["channel", "code"]
    }

    /// What a confirmation attempt came to; decided in the transaction that counts the attempt.
    enum Outcome: Sendable {
        case verified(User)
        case wrongCode(left: Int)
        case exhausted
        case expired
        case nonePending
    }

    func add(to builder: inout Router.Builder) {
        let pool = auth.pool
        builder.add(.post, "/v1/me/contacts/verify", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let user = try await caller.user()
            let body = try context.decodeJSON(VerifyBody.self)
            let address = try Self.address(of: user, channel: body.channel)
            let code = Self.generateCode()
            let hash = Self.hash(code, user: user.id, channel: body.channel, address: address)
            let limit = limits.verificationCodesPerUserPerDay
            let wait = try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { connection -> Int? in
                    let store = ContactVerificationStore()
                    if let pending = try store.pending(user: user.id, channel: body.channel, on: connection),
                       !pending.expired, pending.age < Self.resendInterval {
                        return Self.resendInterval - pending.age
                    }
                    if body.channel == "phone" {
                        try Throttle.requireSMSAllowed(address, tenant: user.tenantID, field: "channel", on: connection)
                    }
                    try Throttle.count([RateLimit("verify-send:\(user.tenantID.uuidString):\(user.id.uuidString)", limit: limit, window: Throttle.day)],
                                       "too many codes sent today; try again tomorrow", on: connection)
                    try store.replace(tenant: user.tenantID, user: user.id, channel: body.channel, address: address,
                                      codeHash: hash, lifetime: Self.codeLifetime, on: connection)
                    try OutboxStore().enqueue(
                        tenant: user.tenantID, channel: body.channel == "email" ? "email" : "sms", recipient: address,
                        template: "verification",
                        data: RawJSON("{\"code\":\"\(code)\",\"expires_in_s\":\(Self.codeLifetime)}"), on: connection)
                    return nil
                }
            }
            if let wait {
                throw APIError(.tooManyRequests, code: "rate_limited", message: "a code was sent less than a minute ago",
                               headers: ["Retry-After": String(max(1, wait))])
            }
            return try APIJSON.response(.accepted, ["status": "sent"])
        }
        builder.add(.post, "/v1/me/contacts/confirm", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let user = try await caller.user()
            let body = try context.decodeJSON(ConfirmBody.self)
            let address = try Self.address(of: user, channel: body.channel)
            guard body.code.utf8.count == 6, body.code.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                throw APIError.invalid("code must be the 6 digits that were sent", "code")
            }
            let given = Self.hash(body.code, user: user.id, channel: body.channel, address: address)
            let outcome = try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { connection -> Outcome in
                    let store = ContactVerificationStore()
                    guard let pending = try store.pending(user: user.id, channel: body.channel, on: connection),
                          pending.address == address else { return .nonePending }
                    if pending.expired {
                        try store.remove(user: user.id, channel: body.channel, on: connection)
                        return .expired
                    }
                    guard pending.attempts < Self.maxAttempts else { return .exhausted }
                    guard Secrets.constantTimeEqual(pending.codeHash, given) else {
                        try store.recordAttempt(user: user.id, channel: body.channel, on: connection)
                        return .wrongCode(left: Self.maxAttempts - pending.attempts - 1)
                    }
                    try store.remove(user: user.id, channel: body.channel, on: connection)
                    try UserStore().markVerified(user: user.id, channel: body.channel, address: address, on: connection)
                    return .verified(try UserStore().find(id: user.id, on: connection)!)
                }
            }
            switch outcome {
            case .verified(let user):
                return try APIJSON.response(.ok, UserView(user))
            case .wrongCode(let left):
                throw APIError.invalid("that code is not right; \(left) \(left == 1 ? "try" : "tries") left", "code")
            case .exhausted:
                throw APIError(.tooManyRequests, code: "rate_limited", message: "too many wrong codes; ask for a new one",
                               headers: ["Retry-After": String(Self.resendInterval)])
            case .expired:
                throw APIError(.gone, code: "expired", message: "the code has expired; ask for a new one", field: "code")
            case .nonePending:
                throw APIError.invalid("no code is pending for that channel; ask for one first", "channel")
            }
        }
    }

    /// The user's address on a channel: 400 for an unknown channel or a missing address,
    /// 409 when it is verified already.
    static func address(of user: User, channel: String) throws(APIError) -> String {
        let address: String?
        let verified: Bool
        switch channel {
        case "email": (address, verified) = (user.email, user.emailVerified)
        case "phone": (address, verified) = (user.phone, user.phoneVerified)
        default:
            throw APIError.invalid("channel must be email or phone", "channel")
        }
        guard let address else {
            throw APIError.invalid("your account has no \(channel) to verify", "channel")
        }
        guard !verified else { throw APIError(.conflict, code: "conflict", message: "your \(channel) is verified already", field: "channel") }
        return address
    }

    /// Six uniformly random digits from the CSPRNG (draws above the last whole million are redrawn).
    static func generateCode() -> String {
        while true {
            let bytes = Secrets.randomBytes(4)
            let value = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            if value < 4_294_000_000 {
                let digits = String(value % 1_000_000)
                return String(repeating: "0", count: 6 - digits.count) + digits
            }
        }
    }

    /// The stored form of a code, bound to the user, channel and address it was sent for.
    static func hash(_ code: String, user: UUID, channel: String, address: String) -> [UInt8] {
        Digest.sha256(Array("\(user.uuidString.lowercased()):\(channel):\(address):\(code)".utf8))
    }
}
