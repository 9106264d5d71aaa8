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
    /// Where a bridge's hook URL lives; the rest of the path is its secret.
    static let hookPrefix = "/v1/bridge/hooks/"
    /// The shortest heartbeat: a watch that announces silence needs room for a late beat.
    static let minimumHeartbeatSeconds = 60

    struct CreateBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let name: String
        let signing: Bool?
        let heartbeatSeconds: Int?
        let ratePerMinute: Int?
        let burst: Int?
        let place: PlaceBody?
        let arm: String?
        let schedule: BridgeArm.Schedule?
        let cooldownSeconds: Int?
        let profile: String?
        let hook: Bool?
        let dc09: DC09Body?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case name, signing, burst, place, arm, schedule, profile, hook, dc09
            case heartbeatSeconds = "heartbeat_s"
            case ratePerMinute = "rate_per_minute"
            case cooldownSeconds = "cooldown_s"
        }
    }

    struct PatchBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let name: String?
        /// Absent: unchanged; null: no place.
        let place: SettingChange<PlaceBody?>
        let arm: String?
        let schedule: BridgeArm.Schedule?
        /// Absent: unchanged; null: no cooldown.
        let cooldownSeconds: SettingChange<Int?>
        let profile: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case name, place, arm, schedule, profile
            case cooldownSeconds = "cooldown_s"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decodeIfPresent(String.self, forKey: .name)
            place = try container.decodeSetting(PlaceBody.self, forKey: .place)
            arm = try container.decodeIfPresent(String.self, forKey: .arm)
            schedule = try container.decodeIfPresent(BridgeArm.Schedule.self, forKey: .schedule)
            cooldownSeconds = try container.decodeSetting(Int.self, forKey: .cooldownSeconds)
            profile = try container.decodeIfPresent(String.self, forKey: .profile)
        }
    }

    /// Where a bridge is: an address, a place on the map, or both.
    struct PlaceBody: Decodable, KnownFields, Equatable {
        static let fieldNames: Set<String> = ["address", "location"]
        let address: String?
        let location: Location?

        func validated() throws(APIError) -> BridgePlace {
            guard address != nil || location != nil else { throw APIError.invalid("a place needs an address, a location or both", "place") }
            return BridgePlace(address: try address.map { value throws(APIError) in try BoundedText.name(value, field: "place.address", range: 1...200) },
                               location: try location?.validatedJSON(field: "place.location"))
        }
    }

    /// The identity an alarm panel reports under over SIA DC-09 (docs/BRIDGES.md).
    struct DC09Body: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let receiver: String?
        let line: String
        let account: String
        let keyBits: Int?
        let holdUpIsDuress: Bool?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case receiver, line, account
            case keyBits = "key_bits"
            case holdUpIsDuress = "hold_up_is_duress"
        }

        /// The identity, hex digits in upper case, and a new key of `key_bits` (nil for 0: plain frames).
        func validated() throws(APIError) -> (DC09Identity, key: [UInt8]?) {
            func hex(_ value: String, _ field: String, _ lengths: ClosedRange<Int>) throws(APIError) -> String {
                guard lengths.contains(value.utf8.count), value.utf8.allSatisfy({ DC09Body.isHex($0) }) else {
                    throw APIError.invalid("dc09.\(field) must be \(lengths.lowerBound) to \(lengths.upperBound) hex digits, as the panel sends it", "dc09.\(field)")
                }
                return value.uppercased()
            }
            let receiver = try hex(receiver ?? "", "receiver", 0...6), line = try hex(line, "line", 1...6)
            guard (3...16).contains(account.utf8.count), account.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || (($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A) }) else {
                throw APIError.invalid("dc09.account must be 3 to 16 letters and digits, as the panel sends it", "dc09.account")
            }
            let bits = keyBits ?? 128
            guard [0, 128, 192, 256].contains(bits) else {
                throw APIError.invalid("dc09.key_bits must be 128, 192 or 256 (AES), or 0 for a panel that cannot encrypt", "dc09.key_bits")
            }
            let identity = DC09Identity(receiver: receiver, line: line, account: account.uppercased(), keyBits: bits, holdUpIsDuress: holdUpIsDuress ?? false)
            return (identity, bits == 0 ? nil : Secrets.randomBytes(bits / 8))
        }

        static func isHex(_ byte: UInt8) -> Bool { (byte >= 0x30 && byte <= 0x39) || ((byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x66) }
    }

    /// A bridge's DC-09 identity; `key` (hex) only in the answer that made it.
    struct DC09View: Encodable {
        let receiver: String
        let line: String
        let account: String
        let keyBits: Int
        let holdUpIsDuress: Bool
        let key: String?

        init(_ identity: DC09Identity, key: [UInt8]? = nil) {
            (receiver, line, account, keyBits, holdUpIsDuress) = (identity.receiver, identity.line, identity.account, identity.keyBits, identity.holdUpIsDuress)
            self.key = key.map { $0.map { String(format: "%02X", $0) }.joined() }
        }

        enum CodingKeys: String, CodingKey {
            case receiver, line, account, key
            case keyBits = "key_bits"
            case holdUpIsDuress = "hold_up_is_duress"
        }
    }

    /// Profiles that say how a bridge's MQTT topics are read.
    static let profiles: Set<String> = ["roost", "frigate", "home_assistant"]

    static func cooldown(_ seconds: Int?) throws(APIError) -> Int? {
        if let seconds, !(60...86_400).contains(seconds) { throw APIError.invalid("cooldown_s must be 60 to 86400, or null for none", "cooldown_s") }
        return seconds
    }

    static func profile(_ profile: String) throws(APIError) -> String {
        guard profiles.contains(profile) else { throw APIError.invalid("profile must be roost, frigate or home_assistant", "profile") }
        return profile
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
        @Null var place: PlaceView?
        let arm: String
        @Null var schedule: BridgeArm.Schedule?
        @Null var cooldownSeconds: Int?
        let profile: String
        /// Whether the bridge has a hook URL (shown once, at creation).
        let hook: Bool
        @Null var dc09: DC09View?

        init(bridge: Bridge) {
            (id, name, groupID, heartbeatSeconds, lastSeenAt) = (bridge.id, bridge.name, bridge.groupID, bridge.heartbeatSeconds, bridge.lastSeenAt)
            (signing, ratePerMinute, burst, createdAt) = (bridge.signingSecret != nil, bridge.ratePerMinute, bridge.burst, bridge.createdAt)
            place = bridge.place.map { place in
                PlaceView(address: place.address, location: place.location.flatMap { try? JSONDecoder().decode(Location.self, from: Data($0.utf8)) })
            }
            let arm = BridgeArm(bridge)
            (self.arm, schedule) = (arm.state, arm.schedule)
            (cooldownSeconds, profile, hook) = (bridge.cooldownSeconds, bridge.profile, bridge.hasHook)
            dc09 = bridge.dc09.map { DC09View($0) }
        }

        struct PlaceView: Encodable {
            @Null var address: String?
            @Null var location: Location?
        }

        enum CodingKeys: String, CodingKey {
            case id, name, signing, burst, place, arm, schedule, profile, hook, dc09
            case cooldownSeconds = "cooldown_s"
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
        /// `/v1/bridge/hooks/{secret}`, when the bridge was made with `hook: true`: the path a
        /// device posts to without any header (shown once; keep it as secret as the key).
        let hookPath: String?
        /// The DC-09 identity with its key (hex), when the bridge was made with one (shown once).
        let dc09: DC09View?

        enum CodingKeys: String, CodingKey {
            case bridge, key, secret, dc09
            case hookPath = "hook_path"
        }
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
            let place = try body.place?.validated()
            let arm = try BridgeArm(body.arm ?? "armed", schedule: body.schedule), cooldown = try Self.cooldown(body.cooldownSeconds)
            let profile = try Self.profile(body.profile ?? "roost")
            let dc09 = try body.dc09?.validated()
            let (bridge, key, hook) = try await caller.inGroup(group) { caller, connection in
                try caller.requireManager("only the owner and admins manage bridges")
                guard try BridgeStore().list(group: group, on: connection).count < Self.maxPerGroup else {
                    throw APIError(.conflict, code: .conflict, message: "a group holds at most \(Self.maxPerGroup) bridges; revoke one first")
                }
                let (text, token) = TenantToken.generate(TenantToken.bridge, tenant: caller.user.tenantID)
                let hook = body.hook == true ? TenantToken.generate(TenantToken.bridgeHook, tenant: caller.user.tenantID) : nil
                var bridge = try BridgeStore().create(
                    tenant: caller.user.tenantID, group: group, name: name, keyHash: token.hash, signingSecret: secret,
                    heartbeatSeconds: body.heartbeatSeconds, ratePerMinute: rate, burst: burst, hookHash: hook?.token.hash, place: place,
                    arm: arm.stored, cooldownSeconds: cooldown, profile: profile, createdBy: caller.user.id, on: connection)
                if let (identity, key) = dc09 {
                    do {
                        try DC09Store().assign(identity, key: key, tenant: caller.user.tenantID, bridge: bridge.id, on: connection)
                    } catch is DC09Store.Taken {
                        throw APIError(.conflict, code: .conflict, message: "another bridge on this Roost (perhaps of another tenant) reports under "
                                       + "this receiver, line and account; give the panel another account number", field: "dc09.account")
                    }
                    bridge.dc09 = identity
                }
                if let heartbeat = body.heartbeatSeconds {
                    try BridgeStore().watch(tenant: caller.user.tenantID, bridge: bridge.id, heartbeatSeconds: heartbeat, on: connection)
                }
                try Audit.record(caller, group: group, .bridgeCreated, target: ("bridge", bridge.id.lowercasedText),
                                 data: "{\"name\":\(JSONString.quote(name)),\"signing\":\(secret != nil),\"hook\":\(hook != nil),"
                                     + "\"dc09\":\(dc09.map { JSONString.quote($0.0.account) } ?? "null")}", on: connection)
                return (bridge, text, hook?.text)
            }
            return try APIJSON.response(.created, CreatedView(bridge: BridgeView(bridge: bridge), key: key, secret: secret,
                                                              hookPath: hook.map { Self.hookPrefix + $0 },
                                                              dc09: dc09.map { DC09View($0.0, key: $0.key) }))
        }
        builder.add(.patch, "/v1/groups/{gid:uuid}/bridges/{bid:uuid}", bodyLimit: 8 * 1024, signedIn: auth) { context, caller in
            let (group, id) = (context.parameters.uuid("gid")!, context.parameters.uuid("bid")!)
            let body = try context.decodeJSON(PatchBody.self)
            var changes = BridgeChanges()
            changes.name = try body.name.map { value throws(APIError) in try BoundedText.name(value, field: "name", range: 1...100) }
            if case .set(let place) = body.place { changes.place = .set(try place?.validated()) }
            if let state = body.arm {
                changes.arm = try BridgeArm(state, schedule: body.schedule).stored
            } else if body.schedule != nil {
                throw APIError.invalid("a schedule goes with arm: schedule", "schedule")
            }
            if case .set(let seconds) = body.cooldownSeconds { changes.cooldownSeconds = .set(try Self.cooldown(seconds)) }
            changes.profile = try body.profile.map { value throws(APIError) in try Self.profile(value) }
            let bridge = try await caller.inGroup(group) { [changes] caller, connection in
                try caller.requireManager("only the owner and admins manage bridges")
                guard let bridge = try BridgeStore().update(id, group: group, changes, on: connection) else {
                    throw APIError(.notFound, code: .notFound, message: "no such bridge")
                }
                try Audit.record(caller, group: group, .bridgeChanged, target: ("bridge", id.lowercasedText),
                                 data: "{\"name\":\(JSONString.quote(bridge.name)),\"arm\":\(JSONString.quote(bridge.arm))}", on: connection)
                return bridge
            }
            return try APIJSON.response(.ok, BridgeView(bridge: bridge))
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
        // The secret is in the path: the access log writes the route's pattern, and a path no route answers without its secret.
        builder.secretPaths(under: Self.hookPrefix)
        builder.add(.post, "/v1/bridge/hooks/{secret}", bodyLimit: 64 * 1024) { context in
            try await alert(context, credential: .hook(context.parameters["secret"] ?? ""))
        }
        builder.add(.post, "/v1/bridge/heartbeat", bodyLimit: 4 * 1024) { context in
            _ = try await bridges.admit(context)
            return HTTPResponse(status: .noContent)
        }
    }

    // MARK: - Bridge requests

    /// Roost's own alert body, from the bridge named by the `Authorization` header or by
    /// `credential` (a hook URL's secret).
    private func alert(_ context: RequestContext, credential: BridgeAuthentication.Credential? = nil) async throws -> HTTPResponse {
        let body = try context.decodeJSON(AlertBody.self)
        let alert = try BridgeAlert(action: body.action, dedupKey: body.dedupKey, summary: body.summary, severity: body.severity,
                                    occurredAt: body.occurredAt, location: body.location, attachments: body.attachments ?? []) { () throws(APIError) in
            try Self.details(context.request.body)
        }
        let (tenant, bridge) = try await bridges.admit(context, credential: credential)
        switch try await BridgeIntake(pool: auth.pool).apply(alert, by: bridge, tenant: tenant) {
        case .created(let json): return .json(.created, Array(json.utf8))
        case .repeated(let json), .resolved(let json): return .json(.ok, Array(json.utf8))
        case .nothingOpen: throw APIError(.notFound, code: .notFound, message: "no open alert under that dedup_key", field: "dedup_key")
        }
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
