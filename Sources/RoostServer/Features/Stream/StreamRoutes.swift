import Foundation
import RoostFanout
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// `GET /v1/stream` (API.md "The stream"): authenticated by `Authorization: Bearer` or, for
/// browsers, `?access_token=`; a refused upgrade gets the 401 in the API's error shape. One
/// account holds at most `maxPerAccount` streams on a node (429 beyond): every stream costs the
/// node memory and a share of every fanout.
enum StreamRoutes {
    static let maxPerAccount = 20

    static func add(to builder: inout Router.Builder, auth: Authentication, hub: StreamHub) {
        builder.addWebSocket("/v1/stream") { context in
            let token = try auth.sessionToken(context.bearerToken ?? context.request.target.queryValue("access_token"))
            let user = try await auth.user(token)
            guard hub.streamCount(of: user.id) < maxPerAccount else {
                throw APIError(.tooManyRequests, code: .rateLimited, message: "\(maxPerAccount) streams are open for this account already; close one",
                               headers: ["Retry-After": "5"])
            }
            // A token's hash is always SHA-256's 32 bytes.
            guard let session = SessionKey(bytes: token.hash) else { throw Authentication.sessionEnded }
            return StreamSession(tenantID: user.tenantID, userID: user.id, session: session, hub: hub)
        }
    }
}
