import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// Who a request comes from: a session token, checked against the database in the token's
/// tenant. Routes that need a signed-in user are registered with `signedIn:` and get a
/// `SignedIn` (the token, already of the right shape) instead of checking it themselves.
struct Authentication: Sendable {
    let pool: ConnectionPool
    let sessionLifetime: Int
    /// However often it is used, a session ends this long after sign-in (`ROOST_SESSION_MAX_AGE_S`).
    let sessionMaxAge: Int

    static let tokenRequired = APIError(.unauthorized, code: .unauthenticated, message: "a valid session token is required",
                                        headers: ["WWW-Authenticate": "Bearer"])
    static let sessionEnded = APIError(.unauthorized, code: .unauthenticated, message: "the session has ended or the token is not valid",
                                       headers: ["WWW-Authenticate": "Bearer"])

    /// The session token `text` names, or 401 when there is none or it is not of a token's shape.
    func sessionToken(_ text: String?) throws(APIError) -> TenantToken {
        guard let text, let token = TenantToken(text) else { throw Self.tokenRequired }
        return token
    }

    /// The signed-in user, or 401: the token's tenant is set before its session is looked up.
    func user(_ token: TenantToken) async throws -> User {
        let (lifetime, maxAge) = (sessionLifetime, sessionMaxAge)
        let users = UserStore()
        guard let user = try await pool.withConnection({ connection in
            try connection.withTenantTransaction(token.tenant, opening: users.sessionUserQuery(tokenHash: token.hash)) { found, connection in
                try users.sessionUser(found, tokenHash: token.hash, lifetime: lifetime, maxAge: maxAge, on: connection)
            }
        }) else { throw Self.sessionEnded }
        return user
    }

    /// Runs `body` in one transaction of the token's tenant as the signed-in user (401 when the
    /// session has ended): the session is checked in the transaction that does the work, in the
    /// round trip that begins it.
    func asUser<Value: Sendable>(
        _ token: TenantToken, _ body: @escaping @Sendable (User, PostgresConnection) throws -> Value
    ) async throws -> Value {
        let (lifetime, maxAge) = (sessionLifetime, sessionMaxAge)
        let users = UserStore()
        return try await pool.withConnection { connection in
            try connection.withTenantTransaction(token.tenant, opening: users.sessionUserQuery(tokenHash: token.hash)) { found, connection in
                guard let user = try users.sessionUser(found, tokenHash: token.hash, lifetime: lifetime, maxAge: maxAge, on: connection) else {
                    throw Self.sessionEnded
                }
                return try body(user, connection)
            }
        }
    }

    /// Runs `body` in one tenant transaction as a member of `group`. A caller who is not a
    /// member gets 404, exactly as for a group that does not exist. The caller's membership row
    /// is locked FOR UPDATE so their role cannot change under the transaction; FOR SHARE would
    /// let two concurrent changes by the same caller (two transfers) deadlock on upgrading it.
    /// `asking`: a question for the lookup's statement to answer too (`GroupCaller.answer`).
    func inGroup<Value: Sendable>(
        _ token: TenantToken, _ group: UUID, asking question: SQLQuery? = nil,
        _ body: @escaping @Sendable (GroupCaller, PostgresConnection) throws -> Value
    ) async throws -> Value {
        // The session and the membership are checked by one statement in the same transaction,
        // sent with its BEGIN.
        let (lifetime, maxAge) = (sessionLifetime, sessionMaxAge)
        let users = UserStore()
        return try await pool.withConnection { connection in
            let opening = users.sessionMemberQuery(tokenHash: token.hash, group: group, asking: question)
            return try connection.withTenantTransaction(token.tenant, opening: opening) { found, connection in
                guard let (user, role, mutedUntil, answer) = try users.sessionMember(found, tokenHash: token.hash, lifetime: lifetime, maxAge: maxAge,
                                                                                on: connection) else {
                    // Which answer: no session (401); a tenant coordinator, who acts as the
                    // group's admin; or not a member of such a group (404).
                    guard let user = try users.sessionUser(tokenHash: token.hash, lifetime: lifetime, maxAge: maxAge, on: connection) else {
                        throw Self.sessionEnded
                    }
                    guard let answer = try users.coordinatorOf(group: group, user: user.id, asking: question, on: connection) else {
                        throw APIError.noSuchGroup
                    }
                    return try body(GroupCaller(user: user, role: .admin, coordinator: true, answer: answer), connection)
                }
                return try body(GroupCaller(user: user, role: Role(role), mutedUntil: mutedUntil, answer: answer), connection)
            }
        }
    }
}

/// A request whose bearer token has the shape of a session token (the router layer checked
/// it); the session itself is checked, against the database, by `user()` or with the
/// membership by `inGroup`/`run`.
struct SignedIn: Sendable {
    let token: TenantToken
    let auth: Authentication

    /// The signed-in user, or 401.
    func user() async throws -> User { try await auth.user(token) }

    /// `body` in one transaction as a member of `group` (404 for a non-member, 401 for an ended session).
    @discardableResult
    func inGroup<Value: Sendable>(
        _ group: UUID, _ body: @escaping @Sendable (GroupCaller, PostgresConnection) throws -> Value
    ) async throws -> Value {
        try await auth.inGroup(token, group, body)
    }

    /// `body` in one transaction of the caller's tenant as the signed-in user (401 for an ended session).
    @discardableResult
    func inTenant<Value: Sendable>(_ body: @escaping @Sendable (User, PostgresConnection) throws -> Value) async throws -> Value {
        try await auth.asUser(token, body)
    }

    /// Runs a user's use case as the caller, in the transaction that checks their session.
    @discardableResult
    func run<UseCase: UserUseCase>(_ useCase: UseCase) async throws -> UseCase.Output {
        try await auth.asUser(token) { user, connection in try useCase.run(by: user, on: connection) }
    }

    /// Runs a group use case as the caller, in the transaction that checks their membership.
    @discardableResult
    func run<UseCase: GroupUseCase>(_ useCase: UseCase) async throws -> UseCase.Output {
        try await runTelling(useCase).output
    }

    /// `run`, telling also who the caller turned out to be.
    func runTelling<UseCase: GroupUseCase>(_ useCase: UseCase) async throws -> (output: UseCase.Output, user: UUID) {
        try await auth.inGroup(token, useCase.group, asking: useCase.openingQuestion(caller: UserStore.caller)) { caller, connection in
            (try useCase.run(by: caller, on: connection), caller.user.id)
        }
    }
}

extension Router.Builder {
    /// A route for signed-in users: a request without a bearer token of a session token's shape
    /// is refused with 401 before the handler runs (or its body is decoded). What it answers is
    /// one person's and is never stored by a cache on the way (`Cache-Control: no-store`,
    /// unless the route says otherwise).
    mutating func add(_ method: HTTPMethod, _ pattern: String, bodyLimit: Int? = nil, signedIn auth: Authentication,
                      _ handler: @escaping @Sendable (RequestContext, SignedIn) async throws -> HTTPResponse) {
        add(method, pattern, bodyLimit: bodyLimit) { context in
            var response = try await handler(context, SignedIn(token: auth.sessionToken(context.bearerToken), auth: auth))
            if response.headers["Cache-Control"] == nil { response.headers.add("Cache-Control", "no-store") }
            return response
        }
    }
}
