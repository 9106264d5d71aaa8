import Foundation

/// A bridge as its group's managers see it; the key is never stored, the signing secret only
/// for verifying.
public struct Bridge: Sendable, Equatable {
    public let id: UUID
    public let groupID: UUID
    public let name: String
    public let signingSecret: String?
    public let heartbeatSeconds: Int?
    public let lastSeenAt: Date?
    public let ratePerMinute: Int
    public let burst: Int
    public let createdAt: Date
    /// Whether the bridge has a hook URL (its secret is shown once).
    public let hasHook: Bool
    public let place: BridgePlace?
    /// `armed`, `disarmed` or `schedule` (then `armSchedule` says when).
    public let arm: String
    /// `{"from", "until", "time_zone"}` as JSON text, for `arm` `schedule`.
    public let armSchedule: String?
    public let cooldownSeconds: Int?
    public let profile: String
    /// Whether the heartbeat watch has a row for it: it has a heartbeat, or an MQTT will said it
    /// went away. A request from a bridge that is neither need not touch the watch.
    public let watched: Bool
    /// The identity an alarm panel reports under over SIA DC-09, when the bridge has one.
    public var dc09: DC09Identity? = nil
}

/// A bridge's DC-09 identity as its managers see it (the key itself is shown once).
public struct DC09Identity: Sendable, Equatable {
    /// The receiver number (hex, "" when the panel sends none), the line prefix (hex) and the
    /// account, as the panel puts them in each frame (hex digits in upper case).
    public let receiver: String
    public let line: String
    public let account: String
    /// 128, 192 or 256; 0 when the panel sends plain frames.
    public let keyBits: Int
    /// SIA's hold-up code HA is read as duress.
    public let holdUpIsDuress: Bool

    public init(receiver: String, line: String, account: String, keyBits: Int, holdUpIsDuress: Bool) {
        (self.receiver, self.line, self.account, self.keyBits, self.holdUpIsDuress) = (receiver, line, account, keyBits, holdUpIsDuress)
    }
}

/// Where a bridge is: its alerts carry it when they name no place of their own.
public struct BridgePlace: Sendable, Equatable {
    public let address: String?
    /// The location as JSON text (`{"lat", "lon", "accuracy_m"?}`), checked by the caller.
    public let location: String?

    public init(address: String?, location: String?) {
        (self.address, self.location) = (address, location)
    }
}

/// What a manager may change of a bridge (`PATCH`); nil leaves a field as it is.
public struct BridgeChanges: Sendable {
    public var name: String?
    /// `.set(nil)` removes the place.
    public var place: SettingChange<BridgePlace?> = .unchanged
    /// With `armSchedule` (JSON text) when it is `schedule`, nil otherwise.
    public var arm: (state: String, schedule: String?)?
    /// `.set(nil)` turns the cooldown off.
    public var cooldownSeconds: SettingChange<Int?> = .unchanged
    public var profile: String?

    public init() {}
}

/// Bridges, in a tenant transaction.
public struct BridgeStore: Sendable {
    public init() {}

    static let columns = """
        id, group_id, name, signing_secret, heartbeat_s, last_seen_at, rate_per_minute, burst, created_at,
        hook_hash IS NOT NULL AS has_hook, place_address, place_location::text AS place_location, arm, arm_schedule::text AS arm_schedule,
        cooldown_s, profile, EXISTS (SELECT 1 FROM bridge_watch w WHERE w.bridge_id = bridges.id) AS watched,
        dc09_receiver, dc09_line, dc09_account, coalesce(length(dc09_key) * 8, 0) AS dc09_key_bits, dc09_hold_up_duress
        """

    public func create(tenant: UUID, group: UUID, name: String, keyHash: [UInt8], signingSecret: String?, heartbeatSeconds: Int?,
                       ratePerMinute: Int, burst: Int, hookHash: [UInt8]? = nil, place: BridgePlace? = nil, arm: (state: String, schedule: String?) = ("armed", nil),
                       cooldownSeconds: Int? = nil, profile: String = "roost", createdBy: UUID, on connection: PostgresConnection) throws -> Bridge {
        try decode(connection.query("""
            INSERT INTO bridges (tenant_id, group_id, name, key_hash, signing_secret, heartbeat_s, rate_per_minute, burst, tokens, created_by,
                                 hook_hash, place_address, place_location, arm, arm_schedule, cooldown_s, profile)
            VALUES (\(tenant), \(group), \(name), \(Data(keyHash)), \(signingSecret), \(heartbeatSeconds), \(ratePerMinute), \(burst),
                    \(Double(burst)), \(createdBy), \(hookHash.map { Data($0) }), \(place?.address), \(place?.location)::jsonb,
                    \(arm.state), \(arm.schedule)::jsonb, \(cooldownSeconds), \(profile))
            RETURNING \(unsafeRaw: Self.columns)
            """).rows[0])
    }

    /// Applies a manager's changes to a live bridge of the group; the bridge as it is now, or
    /// nil when there is no such live bridge.
    public func update(_ id: UUID, group: UUID, _ changes: BridgeChanges, on connection: PostgresConnection) throws -> Bridge? {
        var place: BridgePlace?, setsPlace = false, cooldown: Int?, setsCooldown = false
        if case .set(let value) = changes.place { (place, setsPlace) = (value, true) }
        if case .set(let value) = changes.cooldownSeconds { (cooldown, setsCooldown) = (value, true) }
        return try connection.query("""
            UPDATE bridges SET
                name = coalesce(\(changes.name), name),
                place_address = CASE WHEN \(setsPlace) THEN \(place?.address) ELSE place_address END,
                place_location = CASE WHEN \(setsPlace) THEN \(place?.location)::jsonb ELSE place_location END,
                arm = coalesce(\(changes.arm?.state), arm),
                arm_schedule = CASE WHEN \(changes.arm != nil) THEN \(changes.arm?.schedule)::jsonb ELSE arm_schedule END,
                cooldown_s = CASE WHEN \(setsCooldown) THEN \(cooldown) ELSE cooldown_s END,
                profile = coalesce(\(changes.profile), profile)
            WHERE id = \(id) AND group_id = \(group) AND revoked_at IS NULL
            RETURNING \(unsafeRaw: Self.columns)
            """).first.map(decode)
    }

    /// The bridge's newest alert under `dedupKey`, open or closed, when it opened within the
    /// last `seconds` (the cooldown): its seq.
    public func recentAlert(bridge: UUID, dedupKey: String, within seconds: Int, on connection: PostgresConnection) throws -> Int64? {
        try connection.query("""
            SELECT seq FROM (SELECT seq, opened_at FROM alerts WHERE bridge_id = \(bridge) AND dedup_key = \(dedupKey)
                             ORDER BY seq DESC LIMIT 1) newest
            WHERE opened_at > now() - \(seconds) * interval '1 second'
            """).first?.decode(Int64.self, "seq")
    }

    public func list(group: UUID, on connection: PostgresConnection) throws -> [Bridge] {
        try connection.query("""
            SELECT \(unsafeRaw: Self.columns) FROM bridges WHERE group_id = \(group) AND revoked_at IS NULL ORDER BY created_at, id
            """).rows.map(decode)
    }

    /// Revokes a bridge (and stops watching it); false when there is no such live bridge in the group.
    public func revoke(_ id: UUID, group: UUID, on connection: PostgresConnection) throws -> Bool {
        guard try connection.query("""
            UPDATE bridges SET revoked_at = now() WHERE id = \(id) AND group_id = \(group) AND revoked_at IS NULL
            """).affectedRows == 1 else { return false }
        try unwatch(id, on: connection)
        try DC09Store().release(bridge: id, on: connection)
        return true
    }

    /// The live bridge a key names, seen now (the heartbeat's clock counts any request).
    public func authenticate(keyHash: [UInt8], on connection: PostgresConnection) throws -> Bridge? {
        try authenticate(where: "key_hash = \(Data(keyHash))", on: connection)
    }

    /// The live bridge whose hook URL has this secret (its SHA-256), seen now.
    public func authenticate(hookHash: [UInt8], on connection: PostgresConnection) throws -> Bridge? {
        try authenticate(where: "hook_hash = \(Data(hookHash))", on: connection)
    }

    private func authenticate(where match: SQLQuery, on connection: PostgresConnection) throws -> Bridge? {
        try connection.query("""
            UPDATE bridges SET last_seen_at = now() WHERE \(fragment: match) AND revoked_at IS NULL
            RETURNING \(unsafeRaw: Self.columns)
            """).first.map(decode)
    }

    /// Takes one token from the bridge's bucket; the seconds to wait when it is empty, else nil.
    public func consumeToken(_ id: UUID, on connection: PostgresConnection) throws -> Int? {
        let row = try connection.query("""
            UPDATE bridges SET
                tokens = least(burst::double precision, tokens + extract(epoch FROM now() - tokens_at) * rate_per_minute / 60.0) - 1,
                tokens_at = now()
            WHERE id = \(id)
            RETURNING tokens, rate_per_minute
            """).rows[0]
        let tokens = try row.decode(Double.self, "tokens")
        guard tokens < 0 else { return nil }
        // Put the token back (a refused request costs nothing) and say when the next one is due.
        try connection.query("UPDATE bridges SET tokens = tokens + 1 WHERE id = \(id)")
        let rate = Double(try row.decode(Int.self, "rate_per_minute"))
        return max(1, Int((((-tokens) * 60.0) / rate).rounded(.up)))
    }

    /// Records a signature; false when it was seen within the window (a replay). Old ones are forgotten.
    public func recordSignature(tenant: UUID, bridge: UUID, signature: [UInt8], window: Int, on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            DELETE FROM bridge_signatures WHERE bridge_id = \(bridge) AND seen_at < now() - \(window * 2) * interval '1 second'
            """)
        return try connection.query("""
            INSERT INTO bridge_signatures (tenant_id, bridge_id, signature) VALUES (\(tenant), \(bridge), \(Data(signature)))
            ON CONFLICT DO NOTHING
            """).affectedRows == 1
    }

    /// The bridge's open alert under `dedupKey`, locked: its seq.
    public func openAlert(bridge: UUID, dedupKey: String, on connection: PostgresConnection) throws -> Int64? {
        try connection.query("""
            SELECT seq FROM alerts WHERE bridge_id = \(bridge) AND dedup_key = \(dedupKey) AND status = 'open' FOR UPDATE
            """).first?.decode(Int64.self, "seq")
    }

    /// Counts a repeat of an open alert: the new count, and whom the alert is hidden from (its
    /// `alert.repeated` event is hidden alike).
    public func repeatAlert(group: UUID, seq: Int64, on connection: PostgresConnection) throws -> (count: Int, hiddenFrom: UUID?) {
        let row = try connection.query("""
            UPDATE alerts SET repeat_count = repeat_count + 1 WHERE group_id = \(group) AND seq = \(seq) RETURNING repeat_count, hidden_from
            """).rows[0]
        return (try row.decode(Int.self, "repeat_count"), try row.decode(UUID?.self, "hidden_from"))
    }

    // MARK: - Heartbeats

    /// Starts watching a bridge with a heartbeat: silent after two missed beats.
    public func watch(tenant: UUID, bridge: UUID, heartbeatSeconds: Int, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO bridge_watch (bridge_id, tenant_id, silent_after)
            VALUES (\(bridge), \(tenant), now() + \(2 * heartbeatSeconds) * interval '1 second')
            """)
    }

    public func unwatch(_ bridge: UUID, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM bridge_watch WHERE bridge_id = \(bridge)")
    }

    /// A request from a watched bridge moves its silence deadline (a bridge without a
    /// heartbeat is watched only once an MQTT will said it went away: its deadline is never);
    /// true when it was offline (it has just come back).
    public func heard(_ bridge: UUID, heartbeatSeconds: Int?, on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            UPDATE bridge_watch w SET silent_after = CASE WHEN \(heartbeatSeconds)::int IS NULL THEN 'infinity'::timestamptz
                                                          ELSE now() + \(heartbeatSeconds.map { 2 * $0 })::int * interval '1 second' END,
                                      offline = false, attempts = 0, last_error = NULL, parked_at = NULL
            FROM (SELECT offline FROM bridge_watch WHERE bridge_id = \(bridge) FOR UPDATE) before
            WHERE w.bridge_id = \(bridge)
            RETURNING before.offline AS was_offline
            """).first?.decode(Bool.self, "was_offline") ?? false
    }

    /// Marks a bridge offline because its device said so (an MQTT will, or a keep-alive that
    /// ran out), watching it from now on if it was not; true when it was online until now (the
    /// managers are to be told), false when the watch had already announced it.
    public func wentAway(tenant: UUID, bridge: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            INSERT INTO bridge_watch (bridge_id, tenant_id, silent_after, offline) VALUES (\(bridge), \(tenant), 'infinity', true)
            ON CONFLICT (bridge_id) DO UPDATE SET offline = true WHERE NOT bridge_watch.offline
            RETURNING bridge_id
            """).affectedRows == 1
    }

    /// Claims one watched bridge that has fallen silent (SKIP LOCKED: one node handles it) and
    /// marks it offline; its id and tenant.
    public func claimSilent(on connection: PostgresConnection) throws -> (bridge: UUID, tenant: UUID)? {
        try connection.query("""
            UPDATE bridge_watch SET offline = true
            WHERE bridge_id = (SELECT bridge_id FROM bridge_watch WHERE NOT offline AND parked_at IS NULL AND silent_after <= now()
                               ORDER BY silent_after LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING bridge_id, tenant_id
            """).first.map { (try $0.decode(UUID.self, "bridge_id"), try $0.decode(UUID.self, "tenant_id")) }
    }

    /// A bridge by id (revoked or not), under the transaction's tenant.
    public func find(_ id: UUID, on connection: PostgresConnection) throws -> Bridge? {
        try connection.query("SELECT \(unsafeRaw: Self.columns) FROM bridges WHERE id = \(id)").first.map(decode)
    }

    private func decode(_ row: PostgresRow) throws -> Bridge {
        var bridge = Bridge(
            id: try row.decode(UUID.self, "id"), groupID: try row.decode(UUID.self, "group_id"), name: try row.decode(String.self, "name"),
            signingSecret: try row.decode(String?.self, "signing_secret"), heartbeatSeconds: try row.decode(Int?.self, "heartbeat_s"),
            lastSeenAt: try row.decode(Date?.self, "last_seen_at"), ratePerMinute: try row.decode(Int.self, "rate_per_minute"),
            burst: try row.decode(Int.self, "burst"), createdAt: try row.decode(Date.self, "created_at"),
            hasHook: try row.decode(Bool.self, "has_hook"), place: try place(row), arm: try row.decode(String.self, "arm"),
            armSchedule: try row.decode(String?.self, "arm_schedule"),
            cooldownSeconds: try row.decode(Int?.self, "cooldown_s"), profile: try row.decode(String.self, "profile"),
            watched: try row.decode(Bool.self, "watched"))
        if let account = try row.decode(String?.self, "dc09_account") {
            bridge.dc09 = DC09Identity(receiver: try row.decode(String.self, "dc09_receiver"), line: try row.decode(String.self, "dc09_line"),
                                       account: account, keyBits: try row.decode(Int.self, "dc09_key_bits"),
                                       holdUpIsDuress: try row.decode(Bool.self, "dc09_hold_up_duress"))
        }
        return bridge
    }

    private func place(_ row: PostgresRow) throws -> BridgePlace? {
        let address = try row.decode(String?.self, "place_address"), location = try row.decode(String?.self, "place_location")
        return address == nil && location == nil ? nil : BridgePlace(address: address, location: location)
    }
}
