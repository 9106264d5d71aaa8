import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Accounts": register (with an invitation, when the tenant is invite-only), login and
/// logout. The password checks other sections ask for again are `Credentials`'.
struct AccountRoutes: Sendable {
    let pool: ConnectionPool
    /// Passwords checked and hashed, and the throttles that guard them.
    let credentials: Credentials
    /// Sessions: how long they last and how they are checked (`Authentication`).
    let auth: Authentication
    var sessionLifetime: Int { auth.sessionLifetime }
    var sessionMaxAge: Int { auth.sessionMaxAge }

    /// How long an invitation stays valid (7 days by default).
    let invitationLifetime: Int
    let limits: AbuseLimits
    let proxies: TrustedProxies
    /// Web Push: which push services a device may name, and the VAPID key.
    let push: PushSettings

    init(pool: ConnectionPool, hasher: PasswordHasher = PasswordHasher(), sessionLifetime: Int, sessionMaxAge: Int = 7_776_000,
         hashingThreads: Int, invitationLifetime: Int = 7 * 86_400, limits: AbuseLimits = AbuseLimits(), proxies: TrustedProxies = .none,
         push: PushSettings = PushSettings(), log: Log? = nil) {
        self.push = push
        self.auth = Authentication(pool: pool, sessionLifetime: sessionLifetime, sessionMaxAge: sessionMaxAge)
        self.pool = pool
        self.limits = limits
        self.proxies = proxies
        self.invitationLifetime = invitationLifetime
        self.credentials = Credentials(pool: pool, hasher: hasher, hashingThreads: hashingThreads, proxies: proxies, log: log)
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
        let address = credentials.clientAddress(context)
        return NewSession(text: text, token: token, lifetime: min(sessionLifetime, sessionMaxAge),
                          client: context.request.headers["User-Agent"].map { String($0.prefix(200)) }, network: TrustedProxies.network(address))
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
        // Tenant discovery: a client shows "Join Elm Street Watch" before asking for a password,
        // in the tenant's language (the web app's words follow `locale`, as email does).
        builder.add(.get, "/v1/tenants/{slug}") { context in
            let tenant = try await credentials.findTenant(context.parameters["slug"] ?? "")
            return .json(.ok, Array(("{\"slug\":\(JSONString.quote(tenant.slug)),\"name\":\(JSONString.quote(tenant.name)),"
                                     + "\"registration\":\(JSONString.quote(tenant.registration.rawValue)),"
                                     + "\"locale\":\(JSONString.quote(tenant.locale))}").utf8))
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
        try await credentials.throttle([RateLimit(RateLimitKey(.register, credentials.throttleAddress(context)), limit: limits.registrationsPerAddressPerHour, window: 3600)],
                           "too many accounts created from this address; try again later")
        let tenant = try await credentials.findTenant(body.tenant)
        // The invitation, when one is given, is checked for shape and tenant before any hashing;
        // it is redeemed in the transaction that creates the account.
        var invitationHash: [UInt8]?
        if let text = body.invitationToken {
            guard let token = TenantToken(text, prefix: TenantToken.invitation), token.tenant == tenant.id else {
                throw Self.invalidInvitation
            }
            invitationHash = token.hash
        } else if tenant.registration == .inviteOnly {
            throw APIError(.forbidden, code: .forbidden, message: "this neighbourhood is invite-only: registration needs an invitation",
                           field: "invitation_token")
        }
        let password = body.password
        let hasher = credentials.hasher
        let passwordHash = try await credentials.gate.run(address: credentials.throttleAddress(context)) { hasher.hash(password) }
        let session = newSession(tenant: tenant.id, context)
        let redeeming = invitationHash
        do {
            let (user, expires) = try await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant.id) { connection in
                    var invitation: Invitation?
                    if let redeeming, let found = try InvitationStore().find(tokenHash: redeeming, on: connection) {
                        try InvitationJoin.requireOpen(found)
                        invitation = found
                    }
                    var user = try UserStore().create(tenant: tenant.id, email: email, phone: phone, passwordHash: passwordHash, displayName: name, on: connection)
                    if let invitation {
                        try InvitationJoin.join(invitation, user: user, on: connection)
                        user = try UserStore().find(id: user.id, on: connection)!
                    } else if let redeeming {
                        // Not a group's invitation: the operator's, to the tenant itself.
                        guard let seeded = try TenantAdminStore().acceptInvitation(tokenHash: redeeming, by: user.id, on: connection) else {
                            throw Self.invalidInvitation
                        }
                        if seeded.role == "coordinator" { _ = try TenantAdminStore().setCoordinator(true, user: user.id, on: connection) }
                        if let address = seeded.email {
                            try UserStore().markVerified(user: user.id, channel: "email", address: address, on: connection)
                        }
                        if let address = seeded.phone {
                            try UserStore().markVerified(user: user.id, channel: "phone", address: address, on: connection)
                        }
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
            throw APIError(.conflict, code: .conflict, message: "an account with that \(field) already exists here", field: field)
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
                      let (channel, to) = address.email.map({ (OutboxChannel.email, $0) }) ?? address.phone.map({ (OutboxChannel.sms, $0) }),
                      channel == .email ? owner.emailVerified : owner.phoneVerified,
                      try OutsideBudget.allows(channel, to: to, tenant: tenant.id, by: nil, destination: true, limits: limits, on: connection) else { return }
                try OutboxStore().enqueue(tenant: tenant.id, channel: channel, recipient: to, template: .registrationAttempted,
                                          data: RawJSON("{\"channel\":\"\(channel == .sms ? "phone" : "email")\"}"), on: connection)
            }
        }
    }

    static let invalidInvitation = APIError(.forbidden, code: .forbidden, message: "that invitation is not valid here",
                                            field: "invitation_token")

    static let signInRefused = APIError(.unauthorized, code: .unauthenticated, message: "that tenant, identifier and password do not match an account")

    private func login(_ context: RequestContext) async throws -> HTTPResponse {
        let body = try context.decodeJSON(LoginBody.self)
        guard body.email == nil || body.phone == nil else {
            throw APIError.invalid("sign in with an email or a phone number, not both", "phone")
        }
        let email = body.email.flatMap(EmailAddress.normalize)
        let phone = body.phone.flatMap(PhoneNumber.normalize)
        let address = credentials.throttleAddress(context)
        let password = body.password
        let hasher = credentials.hasher
        // Counted before any password work, atomically (the keys are locked while they are
        // counted and the attempt recorded as a failure): concurrent guesses cannot race past
        // the limit. The account key makes every identifier of one account count together. One
        // request per address and identifier at a time on this node gets this far: a flood from
        // one address waits in memory, holding no database connection, and stops at its limit.
        let attempt = UUID()
        let identifierKey = Digest.sha256(Array("id:\(email ?? phone ?? "")".utf8))
        let addressKey = Digest.sha256(Array("ip:\(address)".utf8))
        let found = try await credentials.serializer.run([RateLimitKey(.signInAddress, address), RateLimitKey(.signInIdentifier, body.tenant, Digest.hex(identifierKey))]) {
            () async throws -> (Tenant, User?)? in
            // An unknown tenant is refused like a wrong password (after the same hashing work, so
            // it takes as long), and counted per address; a database failure is still a 503.
            let tenant: Tenant
            do {
                tenant = try await credentials.findTenant(body.tenant)
            } catch let error as APIError where error.status == .notFound {
                try await credentials.count([RateLimit(RateLimitKey(.loginUnknownTenant, address), limit: limits.unknownTenantSignInsPerAddress,
                                           window: Credentials.throttleWindow)], "too many failed sign-ins; try again later")
                return nil
            }
            let user = try await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant.id) { connection -> User? in
                    let user = email == nil && phone == nil ? nil : try UserStore().find(email: email, phone: phone, on: connection)
                    let accountKey = user.map { Digest.sha256(Array("acct:\($0.id.uuidString)".utf8)) }
                    try Credentials.countAttempt(tenant: tenant.id, attempt: attempt, keys: [(identifierKey, Credentials.failuresPerIdentifier),
                                                                                  (addressKey, Credentials.failuresPerAddress)]
                                              + (accountKey.map { [($0, Credentials.failuresPerIdentifier)] } ?? []), on: connection)
                    return user
                }
            }
            return (tenant, user)
        }
        guard let (tenant, user) = found else {
            let stored = credentials.dummyHash
            _ = try await credentials.gate.run(address: address) { hasher.verify(password, against: stored) }
            throw Self.signInRefused
        }
        let stored = user?.passwordHash ?? credentials.dummyHash
        let matches = try await credentials.gate.run(address: address) { hasher.verify(password, against: stored) }
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
            let fresh = try await credentials.gate.run(address: address) { hasher.hash(password) }
            try await pool.withConnection { try $0.withTenantTransaction(tenant.id) { try UserStore().updatePasswordHash(fresh, user: user.id, on: $0) } }
        }
        let session = newSession(tenant: tenant.id, context)
        let expires = try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant.id) { try session.create(user: user.id, on: $0) }
        }
        return try APIJSON.response(.ok, SessionView(user: UserView(user), token: session.text, expiresAt: expires))
    }

}

