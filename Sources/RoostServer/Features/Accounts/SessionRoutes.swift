import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol

/// Where a user is signed in (API.md "Accounts"): `GET /v1/me/sessions` lists their live
/// sessions (when each began and was last used, the client, the network it signed in from,
/// which one is asking), `DELETE /v1/me/sessions/{id}` ends one, closing its streams on every
/// node. `POST /v1/auth/logout-all` ends them all.
struct SessionRoutes: Sendable {
    let auth: Authentication

    struct SessionView: Encodable {
        @LowercaseID var id: UUID
        let createdAt: Date
        let lastUsedAt: Date
        let expiresAt: Date
        let client: String?
        /// The network (IPv4 /24, IPv6 /48) it signed in from, never the address.
        let address: String?
        let current: Bool

        enum CodingKeys: String, CodingKey {
            case id, client, address, current
            case createdAt = "created_at"
            case lastUsedAt = "last_used_at"
            case expiresAt = "expires_at"
        }
    }

    struct Sessions: Encodable {
        let items: [SessionView]
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.get, "/v1/me/sessions", signedIn: auth) { _, caller in
            let current = caller.token.hash
            let sessions = try await caller.inTenant { user, connection in try UserStore().sessions(of: user.id, on: connection) }
            return try APIJSON.response(.ok, Sessions(items: sessions.map {
                SessionView(id: $0.id, createdAt: $0.createdAt, lastUsedAt: $0.lastUsedAt, expiresAt: $0.expiresAt, client: $0.client,
                            address: $0.network, current: $0.tokenHash == current)
            }))
        }
        builder.add(.delete, "/v1/me/sessions/{id:uuid}", signedIn: auth) { context, caller in
            let id = context.parameters.uuid("id")!
            let ended = try await caller.inTenant { user, connection in
                try UserStore().deleteSession(id: id, user: user.id, tenant: user.tenantID, on: connection)
            }
            guard ended else { throw APIError(.notFound, code: .notFound, message: "no such session") }
            return HTTPResponse(status: .noContent)
        }
    }
}
