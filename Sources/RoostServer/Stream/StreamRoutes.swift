import Foundation
import RoostFanout
import RoostPersistence
import RoostProtocol

/// `GET /v1/stream` (API.md "The stream"): authenticated by `Authorization: Bearer` or, for
/// browsers, `?access_token=`; a refused upgrade gets the 401 in the API's error shape.
enum StreamRoutes {
    static func add(to builder: inout Router.Builder, accounts: AccountRoutes, hub: FanoutHub, queueLimit: Int) {
        builder.addWebSocket("/v1/stream") { context in
            let token = try accounts.sessionToken(context.bearerToken ?? context.request.target.queryValue("access_token"))
            let user = try await accounts.authenticate(token)
            return StreamSession(user: user, sessionHash: UserStore.hex(token.hash), hub: hub, pool: accounts.pool, queueLimit: queueLimit)
        }
    }

    /// The hub's way to write one frame to a batch of stream connections.
    static let send: @Sendable ([UInt8], [AnyObject]) -> Void = { frame, targets in
        WebSocketChannel.send(frame: frame, to: targets.compactMap { $0 as? WebSocketChannel })
    }
}
