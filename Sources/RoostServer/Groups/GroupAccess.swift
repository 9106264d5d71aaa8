import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// The signed-in caller as a member of one group.
struct GroupCaller: Sendable {
    let user: User
    let role: String
    var isManager: Bool { Role(role).isManager }

    /// 403 unless the caller is the owner or an admin.
    func requireManager(_ message: String) throws(APIError) {
        guard isManager else { throw APIError(.forbidden, code: "forbidden", message: message) }
    }
}

extension AccountRoutes {
    static let noSuchGroup = APIError(.notFound, code: "not_found", message: "no such group")

    /// Runs `body` in one tenant transaction as a member of `group`. A caller who is not a
    /// member gets 404, exactly as for a group that does not exist. The caller's membership row
    /// is locked FOR UPDATE so their role cannot change under the transaction; FOR SHARE would
    /// let two concurrent changes by the same caller (two transfers) deadlock on upgrading it.
    @discardableResult
    func inGroup<Value: Sendable>(
        _ context: RequestContext, _ group: UUID, _ body: @escaping @Sendable (GroupCaller, PostgresConnection) throws -> Value
    ) async throws -> Value {
        // The session and the membership are checked by one statement in the same transaction.
        let token = try sessionToken(context)
        let (lifetime, maxAge) = (sessionLifetime, sessionMaxAge)
        return try await pool.withConnection { connection in
            try connection.withTenantTransaction(token.tenant) { connection in
                guard let (user, role) = try UserStore().sessionMember(tokenHash: token.hash, group: group, lifetime: lifetime, maxAge: maxAge, on: connection) else {
                    // Which answer: no session (401), or not a member of such a group (404).
                    guard try UserStore().sessionUser(tokenHash: token.hash, lifetime: lifetime, maxAge: maxAge, on: connection) != nil else { throw Self.sessionEnded }
                    throw Self.noSuchGroup
                }
                return try body(GroupCaller(user: user, role: role), connection)
            }
        }
    }
}
