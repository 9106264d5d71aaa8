import Foundation
import RoostPersistence
import RoostProtocol

/// Tells a bridge's group managers that it went silent (`bridge.offline`, after two missed
/// heartbeats) or came back (`bridge.online`): a notice on each manager's streams on every node,
/// every time; and an email to each manager with a proven address, at most one an hour a
/// manager: what comes within the hour goes into one digest sent when the hour is up
/// (template `bridge_digest`), so a flapping bridge, or five of them, is two emails, not twenty.
enum BridgeNotices {
    static func announce(_ bridge: Bridge, tenant: UUID, event: NoticeKind, on connection: PostgresConnection) throws {
        let managers = try connection.query("""
            SELECT m.user_id, CASE WHEN u.email_verified THEN u.email END AS email
            FROM memberships m JOIN users u ON u.tenant_id = m.tenant_id AND u.id = m.user_id
            WHERE m.group_id = \(bridge.groupID) AND m.role IN ('owner', 'admin') AND u.deleted_at IS NULL
            """).rows.map { (try $0.decode(UUID.self, "user_id"), try $0.decode(String?.self, "email")) }
        let groupName = try GroupStore().group(id: bridge.groupID, on: connection)?.name ?? ""
        let data = "{\"bridge_id\":\"\(bridge.id.lowercasedText)\",\"name\":\(JSONString.quote(bridge.name)),"
            + "\"group_id\":\"\(bridge.groupID.lowercasedText)\",\"group_name\":\(JSONString.quote(groupName)),"
            + "\"heartbeat_s\":\(bridge.heartbeatSeconds.map(String.init) ?? "null")}"
        for (user, email) in managers {
            try GroupEventLog.notifyUser(tenant: tenant, user: user, event: event, data: data, on: connection)
            if let email, try mayEmail(user, at: email, tenant: tenant, bridge: bridge, groupName: groupName, event: event, on: connection) {
                try OutboxStore().enqueue(tenant: tenant, channel: .email, recipient: email, template: event == .bridgeOnline ? .bridgeOnline : .bridgeOffline,
                                          data: RawJSON(data), on: connection)
            }
        }
    }

    /// One bridge email a manager an hour, charged to the tenant's budget; when the hour's email
    /// went already, the change joins the manager's digest, due when the hour is up.
    private static func mayEmail(_ user: UUID, at email: String, tenant: UUID, bridge: Bridge, groupName: String, event: NoticeKind,
                                 on connection: PostgresConnection) throws -> Bool {
        let hourly = RateLimit(RateLimitKey(.bridgeNotice, tenant.lowercasedText, user.lowercasedText), limit: 1, window: Throttle.hour)
        do {
            try connection.withSavepoint { try RateLimitStore().count([hourly], on: $0) }
        } catch let used as RateLimitStore.UsedUp {
            OutsideBudget.refused(.bridgeNotice, tenant: tenant)
            let state = event == .bridgeOffline ? "went silent" : "is back"
            try OutboxStore().addToDigest(tenant: tenant, user: user, channel: .email, recipient: email, template: .bridgeDigest,
                                          line: "\(bridge.name) (\(groupName)) \(state)", due: Date().addingTimeInterval(Double(used.retryAfter)),
                                          on: connection)
            return false
        }
        return try OutsideBudget.allows(.email, to: email, tenant: tenant, by: nil, limits: AbuseLimits(), on: connection)
    }

    /// One round of the watch: marks at most `limit` silent bridges offline, announcing each
    /// (each a job of its own: one that fails is retried later and holds up no other); how
    /// many it announced.
    @discardableResult
    static func sweep(pool: ConnectionPool, runner: JobRunner, limit: Int = 100) async throws -> Int {
        var announced = 0
        for _ in 0..<limit {
            let found = try await pool.withConnection { connection in
                try connection.withTransaction { connection -> Bool? in
                    guard let (id, tenant) = try BridgeStore().claimSilent(on: connection) else { return nil }
                    try connection.setTenant(tenant)
                    return try runner.run(.bridgeWatch, id: id, on: connection) { connection in
                        guard let bridge = try BridgeStore().find(id, on: connection), !(try isRevoked(id, on: connection)) else {
                            try BridgeStore().unwatch(id, on: connection)
                            return false
                        }
                        try announce(bridge, tenant: tenant, event: .bridgeOffline, on: connection)
                        return true
                    } ?? false
                }
            }
            guard let found else { break }
            if found { announced += 1 }
        }
        return announced
    }

    private static func isRevoked(_ id: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("SELECT revoked_at IS NOT NULL AS revoked FROM bridges WHERE id = \(id)").first?.decode(Bool.self, "revoked") ?? true
    }
}

extension BridgeAuthentication {
    /// Admission that tells the managers when a silent bridge is heard again (`bridge.online`).
    static func announcingReturns(pool: ConnectionPool) -> BridgeAuthentication {
        BridgeAuthentication(pool: pool) { bridge, tenant, connection in
            try BridgeNotices.announce(bridge, tenant: tenant, event: .bridgeOnline, on: connection)
        }
    }
}
