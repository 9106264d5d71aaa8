import Foundation
import RoostProtocol

/// A phone or browser that receives alert notifications for its user (API.md "Accounts").
public struct Device: Sendable, Equatable {
    public let id: UUID
    public let platform: String
    public let token: String
    public let createdAt: Date
}

/// A browser's Web Push subscription (RFC 8030, RFC 8291): where to POST and the keys the
/// payload is encrypted to.
public struct WebPushSubscription: Sendable, Equatable {
    public let endpoint: String
    public let p256dh: [UInt8]
    public let auth: [UInt8]
}

/// Devices of one user, in a tenant transaction.
public struct DeviceStore: Sendable {
    public init() {}

    /// Registers a device; registering the same platform and token again returns the existing one
    /// (a Web Push subscription's keys brought up to date).
    public func register(tenant: UUID, user: UUID, platform: String, token: String, webPushKeys: (p256dh: [UInt8], auth: [UInt8])? = nil,
                         on connection: PostgresConnection) throws -> (Device, created: Bool) {
        let (p256dh, auth) = (webPushKeys.map { Data($0.p256dh) }, webPushKeys.map { Data($0.auth) })
        if let existing = try connection.query("""
            UPDATE devices SET p256dh = coalesce(\(p256dh), p256dh), auth = coalesce(\(auth), auth)
            WHERE user_id = \(user) AND platform = \(platform) AND token = \(token)
            RETURNING id, platform, token, created_at
            """).first {
            return (try decode(existing), false)
        }
        let row = try connection.query("""
            INSERT INTO devices (tenant_id, user_id, platform, token, p256dh, auth) VALUES (\(tenant), \(user), \(platform), \(token), \(p256dh), \(auth))
            RETURNING id, platform, token, created_at
            """).rows[0]
        return (try decode(row), true)
    }

    /// A Web Push subscription by its endpoint, with its keys (nil when no device of the
    /// transaction's tenant has that endpoint, or it was registered without keys).
    public func webPushSubscription(endpoint: String, on connection: PostgresConnection) throws -> WebPushSubscription? {
        try connection.query("""
            SELECT p256dh, auth FROM devices
            WHERE platform IN ('webpush', 'unifiedpush') AND token = \(endpoint) AND p256dh IS NOT NULL ORDER BY created_at LIMIT 1
            """).first.map {
            WebPushSubscription(endpoint: endpoint, p256dh: Array(try $0.decode(Data.self, "p256dh")), auth: Array(try $0.decode(Data.self, "auth")))
        }
    }

    /// Removes every device with this Web Push endpoint (the push service said it is gone);
    /// how many there were.
    @discardableResult
    public func deleteWebPush(endpoint: String, on connection: PostgresConnection) throws -> Int {
        try connection.query("DELETE FROM devices WHERE platform IN ('webpush', 'unifiedpush') AND token = \(endpoint)").affectedRows
    }

    public func count(user: UUID, on connection: PostgresConnection) throws -> Int {
        try connection.query("SELECT count(*) AS n FROM devices WHERE user_id = \(user)").rows[0].decode(Int.self, "n")
    }

    public func list(user: UUID, on connection: PostgresConnection) throws -> [Device] {
        try connection.query("""
            SELECT id, platform, token, created_at FROM devices WHERE user_id = \(user) ORDER BY created_at, id
            """).rows.map(decode)
    }

    /// Removes one of the user's devices; false if the user has no such device.
    public func delete(id: UUID, user: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("DELETE FROM devices WHERE id = \(id) AND user_id = \(user)").affectedRows == 1
    }

    private func decode(_ row: PostgresRow) throws -> Device {
        Device(id: try row.decode(UUID.self, "id"), platform: try row.decode(String.self, "platform"),
               token: try row.decode(String.self, "token"), createdAt: try row.decode(Date.self, "created_at"))
    }
}

/// Where a user lives, shown only to people who share a group with them.
public struct Home: Codable, Sendable, Equatable {
    public var address: String?
    public var notes: String?
    /// Where the home is (opt-in): alerts nearby are pushed as critical, and the alert's
    /// managers see how far the member is from it.
    public var location: Location?
    public init(address: String?, notes: String?, location: Location? = nil) {
        self.address = address
        self.notes = notes
        self.location = location
    }
}

extension UserStore {
    /// Changes the display name and/or home; nil leaves a field as it is.
    public func updateProfile(user: UUID, displayName: String?, home: Home?, on connection: PostgresConnection) throws {
        try connection.query("""
            UPDATE users SET display_name = coalesce(\(displayName), display_name),
                             home = coalesce(\(home.map(JSONB.init)), home)
            WHERE id = \(user) AND deleted_at IS NULL
            """)
    }

    public func home(user: UUID, on connection: PostgresConnection) throws -> Home? {
        try connection.query("SELECT home FROM users WHERE id = \(user)").first?.decode(JSONB<Home>?.self, "home")?.value
    }
}
