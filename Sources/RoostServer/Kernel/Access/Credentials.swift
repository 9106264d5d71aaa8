import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
import Synchronization

/// Passwords and PINs checked against their hashes, and the throttles that guard every guess:
/// what sign-in, registration, password resets, account changes and check-in PINs share.
/// Hashing runs behind the `HashingGate`; attempts are counted before a hash is compared.
struct Credentials: Sendable {
    let pool: ConnectionPool
    let hasher: PasswordHasher
    let gate: HashingGate
    let proxies: TrustedProxies
    /// A hash to verify against when the account does not exist, so a failed login costs the
    /// same time either way and does not reveal which accounts exist.
    let dummyHash: String
    /// One request a throttle key at a time on this node (see `KeyedSerializer`).
    let serializer = KeyedSerializer()
    let log: Log?
    /// Whether the untrusted `X-Forwarded-For` was logged (once a server).
    private let forwardNoticed = ForwardNoticed()

    private final class ForwardNoticed: Sendable {
        let seen = Atomic<Bool>(false)
    }

    init(pool: ConnectionPool, hasher: PasswordHasher, hashingThreads: Int, proxies: TrustedProxies, log: Log? = nil) {
        self.pool = pool
        self.hasher = hasher
        self.gate = HashingGate(width: hashingThreads)
        self.proxies = proxies
        self.dummyHash = hasher.hash(UUID().uuidString)
        self.log = log
    }

    /// The address a request comes from: the peer, or behind a trusted proxy the client it
    /// names. An `X-Forwarded-For` from a peer `ROOST_TRUSTED_PROXIES` does not name is ignored,
    /// and said once in the log: it is usually a proxy in front that was not named, behind which
    /// every user shares the proxy's address and its throttles.
    func clientAddress(_ context: RequestContext) -> String {
        let forwarded = context.request.headers["X-Forwarded-For"]
        if forwarded != nil, !proxies.trusts(context.peer), let log,
           forwardNoticed.seen.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            log.warning("X-Forwarded-For came from a peer ROOST_TRUSTED_PROXIES does not name, and is ignored: if a proxy of yours "
                        + "is in front, set ROOST_TRUSTED_PROXIES to its address, or every user behind it shares its throttles",
                        ["peer": context.peer])
        }
        return proxies.client(peer: context.peer, forwardedFor: forwarded)
    }

    /// Who a request comes from, as throttles count it: the client address (behind a trusted
    /// proxy, the one it names), an IPv6 address by its /64.
    func throttleAddress(_ context: RequestContext) -> String {
        TrustedProxies.throttleKey(clientAddress(context))
    }

    /// Counts a hit on each limit, or refuses with 429 and `Retry-After` when one is used up.
    /// Requests on the same limits go one at a time on this node (`KeyedSerializer`).
    func throttle(_ limits: [RateLimit], _ message: String) async throws {
        try await serializer.run(limits.map { Digest.hex($0.key) }) { try await count(limits, message) }
    }

    /// `throttle` for a caller already serialized on what it counts.
    func count(_ limits: [RateLimit], _ message: String) async throws {
        guard let wait = try await pool.withConnection({ try RateLimitStore().hit(limits, on: $0) }) else { return }
        throw APIError(.tooManyRequests, code: .rateLimited, message: message, headers: ["Retry-After": String(wait)])
    }

    /// Login throttling: failures per account (whatever identifier names it), per identifier and
    /// per client address, counted before the password is checked.
    static let throttleWindow = 15 * 60
    static let failuresPerIdentifier = 5
    static let failuresPerAddress = 20

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
            throw APIError(.forbidden, code: .passwordRequired, message: "this change needs the account's current password", field: "current_password")
        }
        guard try await verifyPassword(given, of: user, context) else {
            throw APIError(.forbidden, code: .wrongPassword, message: "that is not the account's password", field: "current_password")
        }
    }

    /// Whether `password` is the signed-in user's, for requests that ask for it again (erasing
    /// the account): counted like a sign-in against the account's failures, so a stolen
    /// session cannot be used to guess the password past the sign-in limit.
    func verifyPassword(_ password: String, of user: User, _ context: RequestContext) async throws -> Bool {
        let accountKey = Digest.sha256(Array("acct:\(user.id.uuidString)".utf8))
        let (tenant, attempt) = (user.tenantID, UUID())
        try await serializer.run([RateLimitKey(.signInAccount, Digest.hex(accountKey))]) {
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
            throw APIError(.tooManyRequests, code: .rateLimited, message: refusal, headers: ["Retry-After": String(wait)])
        }
        try store.record(tenant: tenant, keys: keys.map(\.key), attempt: attempt, window: throttleWindow, on: connection)
    }

    /// The tenant a slug names, or 404 `not_found` on `tenant`.
    func findTenant(_ slug: String) async throws -> Tenant {
        // A slug of the wrong shape cannot exist: no query for it.
        guard let slug = TenantSlug(slug), let tenant = try await pool.withConnection({ try TenantStore().find(slug: slug.text, on: $0) }) else {
            throw APIError(.notFound, code: .notFound, message: "no such tenant", field: "tenant")
        }
        return tenant
    }
}
