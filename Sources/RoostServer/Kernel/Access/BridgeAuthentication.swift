import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol

/// How a bridge's request is admitted (API.md "Bridges"): its key, its rate limit, its
/// signature when it signs, and its heartbeat. The bridge routes and the media uploads a bridge
/// makes both admit through it.
struct BridgeAuthentication: Sendable {
    let pool: ConnectionPool
    /// Called in the admitting transaction when a bridge that had fallen silent is heard again
    /// (the Bridges section announces it back online).
    let cameBack: @Sendable (_ bridge: Bridge, _ tenant: UUID, _ connection: PostgresConnection) throws -> Void

    /// How far a signed request's timestamp may be from now, in seconds.
    static let signatureWindow = 300

    static let unauthenticated = APIError(.unauthorized, code: .unauthenticated, message: "a valid bridge key is required",
                                          headers: ["WWW-Authenticate": "Bearer, Basic realm=\"roost bridge\""])

    /// What names the bridge of a request: its key (from `Authorization: Bearer`, the password
    /// of `Authorization: Basic`, or a body field such as PagerDuty's `routing_key`), or the
    /// secret of its hook URL.
    enum Credential: Sendable {
        case key(String)
        case hook(String)

        var token: TenantToken? {
            switch self {
            case .key(let text): TenantToken(text, prefix: TenantToken.bridge)
            case .hook(let text): TenantToken(text, prefix: TenantToken.bridgeHook)
            }
        }
    }

    /// The key a request carries in its `Authorization` header: Bearer, or the password of
    /// Basic (for cameras and recorders that can only be given a user name and password).
    static func headerKey(_ context: RequestContext) -> String? {
        if let bearer = context.bearerToken { return bearer }
        guard let value = context.request.headers["Authorization"], value.utf8.count <= 512 else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let decoded = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
              let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":") else { return nil }
        return String(text[text.index(after: colon)...])
    }

    /// Authenticates a bridge request, spends a token of its rate limit and checks its
    /// signature (when the bridge signs, and `signedBody`: an upload's body streams past before
    /// it could be checked, so there the key alone admits, to a pending upload nobody sees
    /// until a signed alert links it); the tenant and the bridge. `credential`: what names the
    /// bridge when it is not the `Authorization` header.
    func admit(_ context: RequestContext, credential: Credential? = nil, signedBody: Bool = true) async throws -> (UUID, Bridge) {
        guard let given = credential ?? Self.headerKey(context).map(Credential.key), let token = given.token else { throw Self.unauthenticated }
        let timestamp = context.request.headers["X-Roost-Timestamp"]
        let signature = context.request.headers["X-Roost-Signature"]
        let body = context.request.body
        let bridge = try await pool.withConnection { connection in
            try connection.withTenantTransaction(token.tenant) { connection -> Bridge in
                let store = BridgeStore()
                let found = switch given {
                case .key: try store.authenticate(keyHash: token.hash, on: connection)
                case .hook: try store.authenticate(hookHash: token.hash, on: connection)
                }
                guard let bridge = found else { throw Self.unauthenticated }
                if let wait = try store.consumeToken(bridge.id, on: connection) {
                    throw APIError(.tooManyRequests, code: .rateLimited, message: "this bridge is sending too fast",
                                   headers: ["Retry-After": String(wait)])
                }
                if signedBody, let secret = bridge.signingSecret {
                    let mac = try Self.verify(secret: secret, timestamp: timestamp, signature: signature, body: body)
                    guard try store.recordSignature(tenant: token.tenant, bridge: bridge.id, signature: mac, window: Self.signatureWindow,
                                                    on: connection) else {
                        throw APIError(.conflict, code: .conflict, message: "this signed request was seen already (a replay)")
                    }
                }
                try heard(bridge, tenant: token.tenant, on: connection)
                return bridge
            }
        }
        return (token.tenant, bridge)
    }

    /// Any admitted request, MQTT packet or link test counts as a heartbeat; one after silence
    /// (missed beats, or an MQTT will) brings the bridge back. A bridge the watch does not know
    /// costs nothing here.
    func heard(_ bridge: Bridge, tenant: UUID, on connection: PostgresConnection) throws {
        guard bridge.watched else { return }
        if try BridgeStore().heard(bridge.id, heartbeatSeconds: bridge.heartbeatSeconds, on: connection) {
            try cameBack(bridge, tenant, connection)
        }
    }

    /// A device's connection (MQTT's CONNECT) authenticated by its key alone: no request body
    /// to sign, so a bridge made with a signing secret is refused here (it signs over HTTP);
    /// the tenant and the bridge, or nil.
    func admitDevice(key: String) async throws -> (UUID, Bridge)? {
        guard let token = TenantToken(key, prefix: TenantToken.bridge) else { return nil }
        return try await pool.withConnection { connection in
            try connection.withTenantTransaction(token.tenant) { connection -> (UUID, Bridge)? in
                guard let bridge = try BridgeStore().authenticate(keyHash: token.hash, on: connection), bridge.signingSecret == nil else { return nil }
                try heard(bridge, tenant: token.tenant, on: connection)
                return (token.tenant, bridge)
            }
        }
    }

    /// Checks `X-Roost-Signature: sha256=<hex HMAC-SHA256 of "timestamp.body">` in constant time
    /// and the timestamp's distance from now; the signature's bytes.
    static func verify(secret: String, timestamp: String?, signature: String?, body: [UInt8]) throws(APIError) -> [UInt8] {
        let refused = APIError(.unauthorized, code: .unauthenticated, message: "this bridge signs its requests: a valid X-Roost-Timestamp and X-Roost-Signature are required")
        guard let timestamp, let seconds = Int(timestamp), let signature, signature.hasPrefix("sha256=") else { throw refused }
        guard abs(Int(Date().timeIntervalSince1970) - seconds) <= signatureWindow else {
            throw APIError(.unauthorized, code: .unauthenticated, message: "X-Roost-Timestamp is more than 5 minutes from now")
        }
        let expected = Secrets.hmacSHA256(key: Array(secret.utf8), message: Array((timestamp + ".").utf8) + body)
        let given = Array(Digest.hex(expected).utf8)
        guard Secrets.constantTimeEqual(Array(signature.dropFirst(7).lowercased().utf8), given) else { throw refused }
        return expected
    }
}
