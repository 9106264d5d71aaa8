import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// `GET /v1/stream` (API.md "The stream"): authenticated by `Authorization: Bearer` or, for
/// browsers, `?access_token=`; a refused upgrade gets the 401 in the API's error shape.
enum StreamRoutes {
    static func add(to builder: inout Router.Builder, auth: Authentication, hub: StreamHub) {
        builder.addWebSocket("/v1/stream") { context in
            let token = try auth.sessionToken(context.bearerToken ?? context.request.target.queryValue("access_token"))
            let user = try await auth.user(token)
            return StreamSession(tenantID: user.tenantID, userID: user.id, sessionHash: Digest.hex(token.hash), hub: hub)
        }
    }
}
