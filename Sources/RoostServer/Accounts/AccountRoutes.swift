import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Accounts": register (with an invitation, when the tenant is invite-only), login and
/// logout, and the password check other sections ask for again (erasing the account).
struct AccountRoutes: Sendable {
    let pool: ConnectionPool
    let hasher: PasswordHasher
    let gate: HashingGate
    /// Sessions: how long they last and how they are checked (`Authentication`).
    let auth: Authentication
    var sessionLifetime: Int { auth.sessionLifetime }
    var sessionMaxAge: Int { auth.sessionMaxAge }
    /// A hash to verify against when the account does not exist, so a failed login costs the
    /// same time either way and does not reveal which accounts exist.
    let dummyHash: String

    /// How long an invitation stays valid (7 days by default).
    let invitationLifetime: Int
    let limits: AbuseLimits
    let proxies: TrustedProxies
    /// Web Push: which push services a device may name, and the VAPID key.
    let push: PushSettings
    /// One request a throttle key at a time on this node (see `KeyedSerializer`).
    let serializer = KeyedSerializer()

    init(pool: ConnectionPool, hasher: PasswordHasher = PasswordHasher(), sessionLifetime: Int, sessionMaxAge: Int = 7_776_000,
         hashingThreads: Int, invitationLifetime: Int = 7 * 86_400, limits: AbuseLimits = AbuseLimits(), proxies: TrustedProxies = .none,
         push: PushSettings = PushSettings()) {
        self.push = push
        self.auth = Authentication(pool: pool, sessionLifetime: sessionLifetime, sessionMaxAge: sessionMaxAge)
        self.pool = pool
        self.limits = limits
        self.proxies = proxies
        self.invitationLifetime = invitationLifetime
        self.hasher = hasher
        self.gate = HashingGate(width: hashingThreads)
        self.dummyHash = hasher.hash(UUID().uuidString)
    }

    struct RegisterBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let tenant: String
        let email: String?
        let phone: String?
        let password: String
        let displayName: String
        let invitationToken: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case tenant, email, phone, password
            case displayName = "display_name"
            case invitationToken = "invitation_token"
        }
    }

    /// Who a request comes from, as throttles count it: the client address (behind a trusted
    /// proxy, the one it names), an IPv6 address by its /64.
    /// A session about to begin for a request (sign-up, sign-in, a reset): its token, shown once,
    /// and what it records of where it came from, the client (`User-Agent`) and the network of
    /// the address (`TrustedProxies.network`). `create` writes it in the caller's transaction.
    struct NewSession: Sendable {
        let text: String
        let token: TenantToken
        let lifetime: Int
        let client: String?
        let network: String

        /// The session's row; its expiry.
        func create(user: UUID, on connection: PostgresConnection) throws -> Date {
            try UserStore().createSession(tenant: token.tenant, tokenHash: token.hash, user: user, lifetime: lifetime, client: client, network: network,
                                          on: connection)
        }
    }

    func newSession(tenant: UUID, _ context: RequestContext) -> NewSession {
        let (text, token) = TenantToken.generate(tenant: tenant)
        let address = proxies.client(peer: context.peer, forwardedFor: context.request.headers["X-Forwarded-For"])
        return NewSession(text: text, token: token, lifetime: min(sessionLifetime, sessionMaxAge),
                          client: context.request.headers["User-Agent"].map { String($0.prefix(200)) }, network: TrustedProxies.network(address))
    }

    func throttleAddress(_ context: RequestContext) -> String {
        TrustedProxies.throttleKey(proxies.client(peer: context.peer, forwardedFor: context.request.headers["X-Forwarded-For"]))
    }

    /// Counts a hit on each limit, or refuses with 429 and `Retry-After` when one is used up.
    /// Requests on the same limits go one at a time on this node (`KeyedSerializer`).
    func throttle(_ limits: [RateLimit], _ message: String) async throws {
        try await serializer.run(limits.map { Digest.hex($0.key) }) { try await count(limits, message) }
    }

    /// `throttle` for a caller already serialized on what it counts.
    private func count(_ limits: [RateLimit], _ message: String) async throws {
        guard let wait = try await pool.withConnection({ try RateLimitStore().hit(limits, on: $0) }) else { return }
        throw APIError(.tooManyRequests, code: "rate_limited", message: message, headers: ["Retry-After": String(wait)])
    }

    struct LoginBody: Decodable, KnownFields {
        let tenant: String
        let email: String?
        let phone: String?
        let password: String
        static let fieldNames: Set<String> = ["tenant", "email", "phone", "password"]
    }

    struct SessionView: Encodable {
        let user: UserView
        let token: String
        let expiresAt: Date

        enum CodingKeys: String, CodingKey {
            case user, token
            case expiresAt = "expires_at"
        }
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.post, "/v1/auth/register", bodyLimit: 16 * 1024) { context in try await register(context) }
        builder.add(.post, "/v1/auth/login", bodyLimit: 16 * 1024) { context in try await login(context) }
        // Tenant discovery: a client shows "Join Elm Street Watch" before asking for a password.
        builder.add(.get, "/v1/tenants/{slug}") { context in
            let tenant = try await findTenant(context.parameters["slug"] ?? "")
            return .json(.ok, Array(("{\"slug\":\(JSONString.quote(tenant.slug)),\"name\":\(JSONString.quote(tenant.name)),"
                                     + "\"registration\":\(JSONString.quote(tenant.registration.rawValue))}").utf8))
        }
        builder.add(.post, "/v1/auth/logout", signedIn: auth) { _, caller in
            let hash = caller.token.hash
            try await caller.inTenant { _, connection in try UserStore().deleteSession(tokenHash: hash, on: connection) }
            return HTTPResponse(status: .noContent)
        }
        builder.add(.post, "/v1/auth/logout-all", signedIn: auth) { _, caller in
            try await caller.inTenant { user, connection in try UserStore().deleteSessions(of: user.id, tenant: user.tenantID, on: connection) }
            return HTTPResponse(status: .noContent)
        }
    }

    // MARK: - Use cases

    private func register(_ context: RequestContext) async throws -> HTTPResponse {
        let body = try context.decodeJSON(RegisterBody.self)
        let (email, phone) = try ContactAddresses.validate(email: body.email, phone: body.phone)
        guard (10...1024).contains(body.password.count) else {
            throw APIError.invalid("password must be 10 to 1024 characters", "password")
        }
        let name = try BoundedText.name(body.displayName, field: "display_name", range: 1...100)
        // Counted first, before the tenant is even looked up: a flood from one address reaches
        // the database one request at a time and stops at its limit.
        try await throttle([RateLimit("register:\(throttleAddress(context))", limit: limits.registrationsPerAddressPerHour, window: 3600)],
                           "too many accounts created from this address; try again later")
        let tenant = try await findTenant(body.tenant)
        // The invitation, when one is given, is checked for shape and tenant before any hashing;
        // it is redeemed in the transaction that creates the account.
        var invitationHash: [UInt8]?
        if let text = body.invitationToken {
            guard let token = TenantToken(text, prefix: TenantToken.invitation), token.tenant == tenant.id else {
                throw Self.invalidInvitation
            }
            invitationHash = token.hash
        } else if tenant.registration == .inviteOnly {
            throw APIError(.forbidden, code: "forbidden", message: "this neighbourhood is invite-only: registration needs an invitation",
                           field: "invitation_token")
        }
        let password = body.password
        let hasher = self.hasher
        let passwordHash = try await gate.run(address: throttleAddress(context)) { hasher.hash(password) }
        let session = newSession(tenant: tenant.id, context)
        let redeeming = invitationHash
        do {
            let (user, expires) = try await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant.id) { connection in
                    var invitation: Invitation?
                    if let redeeming {
                        guard let found = try InvitationStore().find(tokenHash: redeeming, on: connection) else { throw Self.invalidInvitation }
                        try RedeemInvitation.requireOpen(found)
                        invitation = found
                    }
                    var user = try UserStore().create(tenant: tenant.id, email: email, phone: phone, passwordHash: passwordHash, displayName: name, on: connection)
                    if let invitation {
                        try RedeemInvitation.join(invitation, user: user, on: connection)
                        user = try UserStore().find(id: user.id, on: connection)!
                    }
                    return (user, try session.create(user: user.id, on: connection))
                }
            }
            return try APIJSON.response(.created, SessionView(user: UserView(user), token: session.text, expiresAt: expires))
        } catch let error as DatabaseError where error.code == .uniqueViolation {
            let field = error.constraint?.contains("phone") == true ? "phone" : "email"
            try await tellOwnerOfTakenAddress(field == "phone" ? (nil, body.phone.flatMap(PhoneNumber.normalize)) : (body.email.flatMap(EmailAddress.normalize), nil),
                                              tenant: tenant)
            throw APIError(.conflict, code: "conflict", message: "an account with that \(field) already exists here", field: field)
        }
    }

    /// Someone tried to register with an address an account has: its owner, when the address is
    /// proven, is told (template `registration_attempted`), within the address's daily budget.
    /// API.md keeps the 409, so the answer itself still says the address is taken.
    private func tellOwnerOfTakenAddress(_ address: (email: String?, phone: String?), tenant: Tenant) async throws {
        let limits = self.limits
        try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant.id) { connection in
                guard let owner = try UserStore().find(email: address.email, phone: address.phone, on: connection),
                      let (channel, to) = address.email.map({ ("email", $0) }) ?? address.phone.map({ ("sms", $0) }),
                      channel == "email" ? owner.emailVerified : owner.phoneVerified,
                      try OutsideBudget.allows(channel, to: to, tenant: tenant.id, by: nil, destination: true, limits: limits, on: connection) else { return }
                try OutboxStore().enqueue(tenant: tenant.id, channel: channel, recipient: to, template: "registration_attempted",
                                          data: RawJSON("{\"channel\":\"\(channel == "sms" ? "phone" : "email")\"}"), on: connection)
            }
        }
    }

    static let invalidInvitation = APIError(.forbidden, code: "forbidden", message: "that invitation is not valid here",
                                            field: "invitation_token")

    /// Login throttling: failures per account (whatever identifier names it), per identifier and
    /// per client address, counted before the password is checked.
    static let throttleWindow = 15 * 60
    static let failuresPerIdentifier = 5
    static let failuresPerAddress = 20

    static let signInRefused = APIError(.unauthorized, code: "unauthenticated", message: "that tenant, identifier and password do not match an account")

    private func login(_ context: RequestContext) async throws -> HTTPResponse {
        let body = try context.decodeJSON(LoginBody.self)
        guard body.email == nil || body.phone == nil else {
            throw APIError.invalid("sign in with an email or a phone number, not both", "phone")
        }
        let email = body.email.flatMap(EmailAddress.normalize)
        let phone = body.phone.flatMap(PhoneNumber.normalize)
        let address = throttleAddress(context)
        let password = body.password
        let hasher = self.hasher
        // Counted before any password work, atomically (the keys are locked while they are
        // counted and the attempt recorded as a failure): concurrent guesses cannot race past
        // the limit. The account key makes every identifier of one account count together. One
        // request per address and identifier at a time on this node gets this far: a flood from
        // one address waits in memory, holding no database connection, and stops at its limit.
        let attempt = UUID()
        let identifierKey = Digest.sha256(Array("id:\(email ?? phone ?? "")".utf8))
        let addressKey = Digest.sha256(Array("ip:\(address)".utf8))
        let found = try await serializer.run(["sign-in-address:\(address)", "sign-in-id:\(body.tenant):\(Digest.hex(identifierKey))"]) {
            () async throws -> (Tenant, User?)? in
            // An unknown tenant is refused like a wrong password (after the same hashing work, so
            // it takes as long), and counted per address; a database failure is still a 503.
            let tenant: Tenant
            do {
                tenant = try await findTenant(body.tenant)
            } catch let error as APIError where error.status == .notFound {
                try await count([RateLimit("login-unknown-tenant:\(address)", limit: limits.unknownTenantSignInsPerAddress,
                                           window: Self.throttleWindow)], "too many failed sign-ins; try again later")
                return nil
            }
            let user = try await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant.id) { connection -> User? in
                    let user = email == nil && phone == nil ? nil : try UserStore().find(email: email, phone: phone, on: connection)
                    let accountKey = user.map { Digest.sha256(Array("acct:\($0.id.uuidString)".utf8)) }
                    try Self.countAttempt(tenant: tenant.id, attempt: attempt, keys: [(identifierKey, Self.failuresPerIdentifier),
                                                                                  (addressKey, Self.failuresPerAddress)]
                                              + (accountKey.map { [($0, Self.failuresPerIdentifier)] } ?? []), on: connection)
                    return user
                }
            }
            return (tenant, user)
        }
        guard let (tenant, user) = found else {
            let stored = dummyHash
            _ = try await gate.run(address: address) { hasher.verify(password, against: stored) }
            throw Self.signInRefused
        }
        let stored = user?.passwordHash ?? dummyHash
        let matches = try await gate.run(address: address) { hasher.verify(password, against: stored) }
        guard matches, let user else { throw Self.signInRefused }
        let accountKey = Digest.sha256(Array("acct:\(user.id.uuidString)".utf8))
        try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant.id) { connection in
                try LoginFailureStore().forget(attempt: attempt, on: connection)
                try LoginFailureStore().clear(key: identifierKey, on: connection)
                try LoginFailureStore().clear(key: accountKey, on: connection)
            }
        }
        if hasher.needsRehash(stored) {
            let fresh = try await gate.run(address: address) { hasher.hash(password) }
            try await pool.withConnection { try $0.withTenantTransaction(tenant.id) { try UserStore().updatePasswordHash(fresh, user: user.id, on: $0) } }
        }
        let session = newSession(tenant: tenant.id, context)
        let expires = try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant.id) { try session.create(user: user.id, on: $0) }
        }
        return try APIJSON.response(.ok, SessionView(user: UserView(user), token: session.text, expiresAt: expires))
    }

    /// Whether `password` is the signed-in user's, for requests that ask for it again (erasing
    /// the account): counted like a sign-in against the account's failures, so a stolen
    /// session cannot be used to guess the password past the sign-in limit.
    /// `{current_password}`, the body of what asks for the password again and nothing else
    /// (`password`, the field's earlier name, is still read).
    struct CurrentPasswordBody: Decodable, KnownFields {
        let currentPassword: String?
        let password: String?
        static let fieldNames: Set<String> = names(CodingKeys.self)
        var given: String? { currentPassword ?? password }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case currentPassword = "current_password"
            case password
        }
    }

    /// The account's password asked again before anything that would hand the account to
    /// whoever holds a session (API.md "Wave 3"): 403 `password_required` without it, 403
    /// `wrong_password` for another (counted like a failed sign-in, so it cannot be guessed).
    func confirmPassword(_ given: String?, of user: User, _ context: RequestContext) async throws {
        guard let given, !given.isEmpty else {
            throw APIError(.forbidden, code: "password_required", message: "this change needs the account's current password", field: "current_password")
        }
        guard try await verifyPassword(given, of: user, context) else {
            throw APIError(.forbidden, code: "wrong_password", message: "that is not the account's password", field: "current_password")
        }
    }

    func verifyPassword(_ password: String, of user: User, _ context: RequestContext) async throws -> Bool {
        let accountKey = Digest.sha256(Array("acct:\(user.id.uuidString)".utf8))
        let (tenant, attempt) = (user.tenantID, UUID())
        try await serializer.run(["sign-in-account:\(Digest.hex(accountKey))"]) {
            try await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant) { connection in
                    try Self.countAttempt(tenant: tenant, attempt: attempt, keys: [(accountKey, Self.failuresPerIdentifier)], on: connection)
                }
            }
        }
        let (hasher, stored) = (hasher, user.passwordHash ?? dummyHash)
        guard try await gate.run(address: throttleAddress(context), { hasher.verify(password, against: stored) }) else { return false }
        try await pool.withConnection { try $0.withTenantTransaction(tenant) { try LoginFailureStore().forget(attempt: attempt, on: $0) } }
        return true
    }

    /// Counts a password attempt as a failure before the password is checked (`forget` takes it
    /// back when it was right): the keys are locked for the transaction, so concurrent attempts
    /// count one after the other, and a key already at its limit is 429 with `Retry-After`.
    static func countAttempt(tenant: UUID, attempt: UUID, keys: [(key: [UInt8], limit: Int)], refusal: String = "too many failed sign-ins; try again later",
                             on connection: PostgresConnection) throws {
        let store = LoginFailureStore()
        try store.lock(tenant: tenant, keys: keys.map(\.key), on: connection)
        let waits = try keys.compactMap { key, limit -> Int? in
            let recent = try store.recent(key: key, window: throttleWindow, on: connection)
            return recent.count >= limit ? recent.clearsIn : nil
        }
        if let wait = waits.max() {
            throw APIError(.tooManyRequests, code: "rate_limited", message: refusal, headers: ["Retry-After": String(wait)])
        }
        try store.record(tenant: tenant, keys: keys.map(\.key), attempt: attempt, window: throttleWindow, on: connection)
    }

    // MARK: - Helpers

    func findTenant(_ slug: String) async throws -> Tenant {
        // A slug of the wrong shape cannot exist: no query for it.
        guard let slug = TenantSlug(slug), let tenant = try await pool.withConnection({ try TenantStore().find(slug: slug.text, on: $0) }) else {
            throw APIError(.notFound, code: "not_found", message: "no such tenant", field: "tenant")
        }
        return tenant
    }
}

/// A user as API.md writes one (`GET /v1/me`, a session).
struct UserView: Encodable {
    @LowercaseID var id: UUID
    let displayName: String
    let email: String?
    let phone: String?
    let emailVerified: Bool
    let phoneVerified: Bool
    let createdAt: Date

    init(_ user: User) {
        id = user.id
        displayName = user.displayName
        email = user.email
        phone = user.phone
        emailVerified = user.emailVerified
        phoneVerified = user.phoneVerified
        createdAt = user.createdAt
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.lowercasedText, forKey: .id)
        try container.encode(displayName, forKey: .displayName)
        try container.encode(email, forKey: .email)  // null, not absent
        try container.encode(phone, forKey: .phone)
        try container.encode(emailVerified, forKey: .emailVerified)
        try container.encode(phoneVerified, forKey: .phoneVerified)
        try container.encode(createdAt, forKey: .createdAt)
    }

    enum CodingKeys: String, CodingKey {
        case id, email, phone
        case displayName = "display_name"
        case emailVerified = "email_verified"
        case phoneVerified = "phone_verified"
        case createdAt = "created_at"
    }
}
