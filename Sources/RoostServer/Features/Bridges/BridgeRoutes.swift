import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Bridges (home security systems)": a group's managers create bridges (key shown once,
/// stored as SHA-256; optional signing secret), and bridges post alerts deduplicated by their
/// `dedup_key`. A bridge key works only on `/v1/bridge/...` and a user token never does.
struct BridgeRoutes: Sendable {
    let auth: Authentication
    let bridges: BridgeAuthentication
    /// The largest `details` object a bridge may send with an alert.
    static let maxDetailsBytes = 16 * 1024
    /// Live bridges in one group (API.md "Bridges, extended"): each can raise alerts and mail
    /// the managers, so a group cannot hold a fleet of them.
    static let maxPerGroup = 20
    /// The shortest heartbeat: a watch that announces silence needs room for a late beat.
    static let minimumHeartbeatSeconds = 60

    struct CreateBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let name: String
        let signing: Bool?
        let heartbeatSeconds: Int?
        let ratePerMinute: Int?
        let burst: Int?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case name, signing, burst
            case heartbeatSeconds = "heartbeat_s"
            case ratePerMinute = "rate_per_minute"
        }
    }

    struct AlertBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self).union(["details"])
        let action: String
        let dedupKey: String
        let summary: String?
        let severity: String?
        let location: Location?
        let occurredAt: String?
        let attachments: [UUID]?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case action, summary, severity, location, attachments
            case dedupKey = "dedup_key"
            case occurredAt = "occurred_at"
        }
    }

    struct BridgeView: Encodable {
        @LowercaseID var id: UUID
        let name: String
        @LowercaseID var groupID: UUID
        @Null var heartbeatSeconds: Int?
        @Null var lastSeenAt: Date?
        /// Whether the bridge signs its requests (the secret itself is shown once, at creation).
        let signing: Bool
        let ratePerMinute: Int
        let burst: Int
        let createdAt: Date

        init(bridge: Bridge) {
            (id, name, groupID, heartbeatSeconds, lastSeenAt) = (bridge.id, bridge.name, bridge.groupID, bridge.heartbeatSeconds, bridge.lastSeenAt)
            (signing, ratePerMinute, burst, createdAt) = (bridge.signingSecret != nil, bridge.ratePerMinute, bridge.burst, bridge.createdAt)
        }

        enum CodingKeys: String, CodingKey {
            case id, name, signing, burst
            case groupID = "group_id"
            case heartbeatSeconds = "heartbeat_s"
            case lastSeenAt = "last_seen_at"
            case ratePerMinute = "rate_per_minute"
            case createdAt = "created_at"
        }
    }

    struct CreatedView: Encodable {
        let bridge: BridgeView
        let key: String
        let secret: String?
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.post, "/v1/groups/{gid:uuid}/bridges", bodyLimit: 8 * 1024, signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let body = try context.decodeJSON(CreateBody.self)
            let name = try BoundedText.name(body.name, field: "name", range: 1...100)
            if let heartbeat = body.heartbeatSeconds, !(Self.minimumHeartbeatSeconds...86_400).contains(heartbeat) {
                throw APIError.invalid("heartbeat_s must be \(Self.minimumHeartbeatSeconds) to 86400", "heartbeat_s")
            }
            let rate = body.ratePerMinute ?? 60
            guard (1...6000).contains(rate) else { throw APIError.invalid("rate_per_minute must be 1 to 6000", "rate_per_minute") }
            let burst = body.burst ?? 20
            guard (1...1000).contains(burst) else { throw APIError.invalid("burst must be 1 to 1000", "burst") }
            let secret = body.signing == true ? "rbs_" + Secrets.base64URL(Secrets.randomBytes(32)) : nil
            let (bridge, key) = try await caller.inGroup(group) { caller, connection in
                try caller.requireManager("only the owner and admins manage bridges")
                guard try BridgeStore().list(group: group, on: connection).count < Self.maxPerGroup else {
                    throw APIError(.conflict, code: .conflict, message: "a group holds at most \(Self.maxPerGroup) bridges; revoke one first")
                }
                let (text, token) = TenantToken.generate(TenantToken.bridge, tenant: caller.user.tenantID)
                let bridge = try BridgeStore().create(
                    tenant: caller.user.tenantID, group: group, name: name, keyHash: token.hash, signingSecret: secret,
                    heartbeatSeconds: body.heartbeatSeconds, ratePerMinute: rate, burst: burst, createdBy: caller.user.id, on: connection)
                if let heartbeat = body.heartbeatSeconds {
                    try BridgeStore().watch(tenant: caller.user.tenantID, bridge: bridge.id, heartbeatSeconds: heartbeat, on: connection)
                }
                try Audit.record(caller, group: group, .bridgeCreated, target: ("bridge", bridge.id.lowercasedText),
                                 data: "{\"name\":\(JSONString.quote(name)),\"signing\":\(secret != nil)}", on: connection)
                return (bridge, text)
            }
            return try APIJSON.response(.created, CreatedView(bridge: BridgeView(bridge: bridge), key: key, secret: secret))
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/bridges", signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let bridges = try await caller.inGroup(group) { caller, connection in
                try caller.requireManager("only the owner and admins manage bridges")
                return try BridgeStore().list(group: group, on: connection)
            }
            return try APIJSON.response(.ok, Page(items: bridges.map(BridgeView.init), next: nil))
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}/bridges/{bid:uuid}", signedIn: auth) { context, caller in
            let (group, id) = (context.parameters.uuid("gid")!, context.parameters.uuid("bid")!)
            try await caller.inGroup(group) { caller, connection in
                try caller.requireManager("only the owner and admins manage bridges")
                guard try BridgeStore().revoke(id, group: group, on: connection) else {
                    throw APIError(.notFound, code: .notFound, message: "no such bridge")
                }
                try Audit.record(caller, group: group, .bridgeRevoked, target: ("bridge", id.lowercasedText), on: connection)
            }
            return HTTPResponse(status: .noContent)
        }
        builder.add(.post, "/v1/bridge/alerts", bodyLimit: 64 * 1024) { context in try await alert(context) }
        builder.add(.post, "/v1/bridge/heartbeat", bodyLimit: 4 * 1024) { context in
            _ = try await bridges.admit(context)
            return HTTPResponse(status: .noContent)
        }
    }

    // MARK: - Bridge requests

    private func alert(_ context: RequestContext) async throws -> HTTPResponse {
        let body = try context.decodeJSON(AlertBody.self)
        let alert = try BridgeAlert(action: body.action, dedupKey: body.dedupKey, summary: body.summary, severity: body.severity,
                                    occurredAt: body.occurredAt, location: body.location, attachments: body.attachments ?? []) { () throws(APIError) in
            try Self.details(context.request.body)
        }
        let (tenant, bridge) = try await bridges.admit(context)
        // Twenty triggers at once race on the partial unique index; the losers' transactions
        // roll back and retry as repeats.
        for _ in 0..<5 {
            do {
                let (created, json) = try await auth.pool.withConnection { connection in
                    try connection.withTenantTransaction(tenant) { try alert.run(by: bridge, tenant: tenant, on: $0) }
                }
                if created { DeliveryBell.shared.ring() }
                return .json(created ? .created : .ok, Array(json.utf8))
            } catch let error as DatabaseError where error.code == .uniqueViolation {
                continue
            }
        }
        throw APIError(.conflict, code: .conflict, message: "the alert changed under this request; send it again")
    }

    /// The `details` object of a bridge alert as JSON text (≤ 16 KiB), or nil.
    static func details(_ body: [UInt8]) throws(APIError) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any], let details = object["details"],
              !(details is NSNull) else { return nil }
        guard details is [String: Any], let data = try? JSONSerialization.data(withJSONObject: details) else {
            throw APIError.invalid("details must be a JSON object", "details")
        }
        guard data.count <= maxDetailsBytes else {
            throw APIError(.payloadTooLarge, code: .payloadTooLarge, message: "details must be at most 16 KiB of JSON", field: "details")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
