import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol

/// A forgotten password, and a password changed (API.md "Accounts"): `POST
/// /v1/auth/password-reset` sends a single-use code (valid an hour, only its hash stored) to
/// the account's address and answers 202 whether or not such an account exists;
/// `POST /v1/auth/password-reset/confirm` sets the new password with it, ends every other
/// session and signs in. `POST /v1/me/password` changes it knowing the current one. Either way
/// a `password_changed` message goes to every verified address.
struct PasswordRoutes: Sendable {
    let accounts: AccountRoutes

    /// How long a code works, how many wrong tries it takes, and its length.
    static let codeLifetime = 3600
    static let maxAttempts = 5
    static let codeDigits = 8
    /// Reset requests for one email or phone in an hour, whoever asks (per client address:
    /// `AbuseLimits.passwordResetsPerAddressPerHour`; wrong codes: `wrongResetCodesPerAddressPerHour`).
    static let requestsPerIdentifierPerHour = 3

    struct RequestBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = ["tenant", "email", "phone"]
        let tenant: String
        let email: String?
        let phone: String?
    }

    struct ConfirmBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let tenant: String
        let email: String?
        let phone: String?
        let code: String
        let newPassword: String
        enum CodingKeys: String, CodingKey, CaseIterable {
            case tenant, email, phone, code
            case newPassword = "new_password"
        }
    }

    struct ChangeBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let currentPassword: String
        let newPassword: String
        enum CodingKeys: String, CodingKey, CaseIterable {
            case currentPassword = "current_password"
            case newPassword = "new_password"
        }
    }

    static let accepted = HTTPResponse.json(.accepted, Array(#"{"status":"sent if the account exists"}"#.utf8))
    static let wrongCode = APIError.invalid("that code is not right", "code")
    static let deadCode = APIError(.gone, code: .expired, message: "that code has expired or been used; ask for a new one", field: "code")

    static func validate(newPassword: String, field: String = "new_password") throws(APIError) -> String {
        guard (10...1024).contains(newPassword.count) else { throw APIError.invalid("a password is 10 to 1024 characters", field) }
        return newPassword
    }

    /// The stored form of a code: bound to the account it was sent for.
    static func hash(_ code: String, user: UUID) -> [UInt8] {
        Digest.sha256(Array("password-reset:\(user.lowercasedText):\(code)".utf8))
    }

    /// `codeDigits` random digits (`Secrets.randomDigits`).
    static func generateCode() -> String { Secrets.randomDigits(codeDigits) }

    func add(to builder: inout Router.Builder) {
        builder.add(.post, "/v1/auth/password-reset", bodyLimit: 4 * 1024) { context in try await request(context) }
        builder.add(.post, "/v1/auth/password-reset/confirm", bodyLimit: 4 * 1024) { context in try await confirm(context) }
        builder.add(.post, "/v1/me/password", bodyLimit: 4 * 1024, signedIn: accounts.auth) { context, caller in try await change(context, caller) }
    }

    /// 202 whatever exists: the request is queued as it is, and the scheduler looks the account
    /// up (`PasswordResetJobs`), so the answer is the same, after the same work, for anyone.
    private func request(_ context: RequestContext) async throws -> HTTPResponse {
        let body = try context.decodeJSON(RequestBody.self)
        let (email, phone) = try ContactAddresses.validate(email: body.email, phone: body.phone)
        guard (email == nil) != (phone == nil) else { throw APIError.invalid("give the email or the phone number, not both", "phone") }
        try await accounts.credentials.throttle([RateLimit(RateLimitKey(.passwordReset, accounts.credentials.throttleAddress(context)), limit: accounts.limits.passwordResetsPerAddressPerHour,
                                               window: Throttle.hour)], "too many reset requests from this address; try again later")
        let tenant = try await accounts.credentials.findTenant(body.tenant)
        let identifier = Digest.hex(Digest.sha256(Array((email ?? phone!).utf8)))
        try await accounts.pool.withConnection { connection in
            try connection.withTenantTransaction(tenant.id) { connection in
                // Counted per address asked for, whether or not it is an account's.
                try Throttle.count([RateLimit(RateLimitKey(.passwordResetIdentifier, tenant.id.uuidString, identifier), limit: Self.requestsPerIdentifierPerHour,
                                              window: Throttle.hour)], "too many reset requests for this account; try again later", on: connection)
                // Whether the tenant texts that country says nothing of who has the number.
                if let phone { try Throttle.requireSMSAllowed(phone, tenant: tenant.id, field: "phone", on: connection) }
                try PasswordResetStore().enqueue(tenant: tenant.id, email: email, phone: phone, on: connection)
            }
        }
        return Self.accepted
    }

    /// The code, then the new password: every session of the account ends (its streams close
    /// on every node) and a new one begins for the caller.
    private func confirm(_ context: RequestContext) async throws -> HTTPResponse {
        let body = try context.decodeJSON(ConfirmBody.self)
        let (email, phone) = try ContactAddresses.validate(email: body.email, phone: body.phone)
        let password = try Self.validate(newPassword: body.newPassword)
        guard body.code.utf8.count == Self.codeDigits, body.code.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw APIError.invalid("the code is \(Self.codeDigits) digits", "code")
        }
        let address = accounts.credentials.throttleAddress(context)
        let wrongLimit = RateLimit(RateLimitKey(.passwordResetWrong, address), limit: accounts.limits.wrongResetCodesPerAddressPerHour,
                                   window: Throttle.hour)
        let tenant = try await accounts.credentials.findTenant(body.tenant)
        // The code is checked (and used up) first; only a right one costs a password hash.
        enum Checked: Sendable { case right(User), wrong, dead }
        let checked = try await accounts.pool.withConnection { connection in
            try connection.withTenantTransaction(tenant.id) { connection -> Checked in
                if let wait = try RateLimitStore().usedUp(wrongLimit, on: connection) {
                    throw APIError(.tooManyRequests, code: .rateLimited, message: "too many wrong codes from this address; try again later",
                                   headers: ["Retry-After": String(wait)])
                }
                guard let user = try UserStore().find(email: email, phone: phone, on: connection),
                      let pending = try PasswordResetStore().pending(user: user.id, on: connection) else {
                    try Self.countWrong(wrongLimit, on: connection)
                    return .wrong
                }
                guard !pending.expired, !pending.used else { return .dead }
                guard Secrets.constantTimeEqual(pending.codeHash, Self.hash(body.code, user: user.id)) else {
                    try PasswordResetStore().failed(user: user.id, maxAttempts: Self.maxAttempts, on: connection)
                    try Self.countWrong(wrongLimit, on: connection)
                    return .wrong
                }
                try PasswordResetStore().use(user: user.id, on: connection)
                return .right(user)
            }
        }
        let user: User
        switch checked {
        case .wrong: throw Self.wrongCode
        case .dead: throw Self.deadCode
        case .right(let found): user = found
        }
        let hasher = accounts.credentials.hasher
        let fresh = try await accounts.credentials.gate.run(address: address) { hasher.hash(password) }
        let session = accounts.newSession(tenant: tenant.id, context)
        let (updated, expires) = try await accounts.pool.withConnection { connection in
            try connection.withTenantTransaction(tenant.id) { connection -> (User, Date) in
                try Self.setPassword(fresh, of: user, keeping: nil, on: connection)
                let expires = try session.create(user: user.id, on: connection)
                return (try UserStore().find(id: user.id, on: connection) ?? user, expires)
            }
        }
        return try APIJSON.response(.ok, AccountRoutes.SessionView(user: UserView(updated), token: session.text, expiresAt: expires))
    }

    /// A wrong code counts against its address's limit (the one that reaches it is still answered
    /// as wrong; the next is refused before its code is looked at).
    private static func countWrong(_ limit: RateLimit, on connection: PostgresConnection) throws {
        do {
            try RateLimitStore().count([limit], on: connection)
        } catch is RateLimitStore.UsedUp {}
    }

    /// Knowing the current password (counted like a sign-in), a new one: every other session ends.
    private func change(_ context: RequestContext, _ caller: SignedIn) async throws -> HTTPResponse {
        let body = try context.decodeJSON(ChangeBody.self)
        let password = try Self.validate(newPassword: body.newPassword)
        let user = try await caller.user()
        guard try await accounts.credentials.verifyPassword(body.currentPassword, of: user, context) else {
            throw APIError.invalid("that is not the account's password", "current_password")
        }
        let hasher = accounts.credentials.hasher
        let fresh = try await accounts.credentials.gate.run(address: accounts.credentials.throttleAddress(context)) { hasher.hash(password) }
        let kept = caller.token.hash
        let updated = try await caller.inTenant { user, connection in
            try Self.setPassword(fresh, of: user, keeping: kept, on: connection)
            return try UserStore().find(id: user.id, on: connection) ?? user
        }
        return try APIJSON.response(.ok, UserView(updated))
    }

    /// The new hash, the end of every session but `kept` (each stream closed with 1008 on every
    /// node), and `password_changed` to every verified address.
    static func setPassword(_ hash: String, of user: User, keeping kept: [UInt8]?, on connection: PostgresConnection) throws {
        try UserStore().updatePasswordHash(hash, user: user.id, on: connection)
        try UserStore().deleteSessions(of: user.id, except: kept, tenant: user.tenantID, on: connection)
        let data = "{\"display_name\":\(JSONString.quote(user.displayName))}"
        if user.emailVerified, let email = user.email {
            try OutboxStore().enqueue(tenant: user.tenantID, channel: .email, recipient: email, template: .passwordChanged, data: RawJSON(data),
                                      on: connection)
        }
        if user.phoneVerified, let phone = user.phone {
            try OutboxStore().enqueue(tenant: user.tenantID, channel: .sms, recipient: phone, template: .passwordChanged, data: RawJSON(data),
                                      on: connection)
        }
    }
}

/// The scheduler's round of reset requests: each becomes a code and its message when an account
/// has the address, and nothing otherwise; the request (with the address) is deleted either way.
struct PasswordResetJobs: Sendable {
    let pool: ConnectionPool
    let runner: JobRunner
    static let perBatch = 50

    /// One round; with `tenant`, of that tenant's requests only. How many were taken.
    @discardableResult
    func runOnce(tenant: UUID? = nil) async throws -> Int {
        try await runner.drain(.passwordReset, pool: pool, perBatch: Self.perBatch,
                               claim: { try JobStore().claimDue(.passwordReset, limit: Self.perBatch, tenant: tenant, on: $0) },
                               handle: { job, connection -> Bool? in
                                   guard let address = try PasswordResetStore().take(job.id, on: connection) else { return nil }
                                   try Self.send(to: address, tenant: job.tenant, on: connection)
                                   return true
                               }).count
    }

    /// The code and its message, when an account has the address (nothing otherwise).
    private static func send(to address: (email: String?, phone: String?), tenant: UUID, on connection: PostgresConnection) throws {
        guard let user = try UserStore().find(email: address.email, phone: address.phone, on: connection) else { return }
        let code = PasswordRoutes.generateCode()
        try PasswordResetStore().replace(tenant: tenant, user: user.id, codeHash: PasswordRoutes.hash(code, user: user.id),
                                         lifetime: PasswordRoutes.codeLifetime, on: connection)
        let data = "{\"code\":\"\(code)\",\"display_name\":\(JSONString.quote(user.displayName)),\"expires_in_s\":\(PasswordRoutes.codeLifetime)}"
        try OutboxStore().enqueue(tenant: tenant, email: address.email, phone: address.phone, template: .passwordReset, data: RawJSON(data),
                                  on: connection)
    }
}
