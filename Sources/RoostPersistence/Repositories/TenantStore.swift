import Foundation

/// A tenant: a town, housing association or security company sharing the deployment.
public struct Tenant: Sendable, Equatable, Codable {
    public enum Registration: String, Sendable, Codable, CaseIterable {
        case open
        case inviteOnly = "invite_only"
    }

    public let id: UUID
    public let slug: String
    public let name: String
    public let registration: Registration
    public let createdAt: Date
    /// Days a group's events are kept (a group may keep them for less); nil: for good.
    public let retentionDays: Int?
    /// The language of its rendered email and Web Push text (`templates/<locale>/`).
    public let locale: String
}

/// The operator's registry of tenants (no row-level security: it holds no personal data and
/// is read before a tenant is known).
public struct TenantStore: Sendable {
    public init() {}

    /// The E.164 prefixes the tenant sends SMS to, or nil for everywhere.
    public func smsPrefixes(_ tenant: UUID, on connection: PostgresConnection) throws -> [String]? {
        try connection.query("SELECT sms_prefixes FROM tenants WHERE id = \(tenant)").first?.decode([String]?.self, "sms_prefixes")
    }

    /// Sets the prefixes (nil: everywhere); false when no tenant has that slug.
    public func setSMSPrefixes(slug: String, _ prefixes: [String]?, on connection: PostgresConnection) throws -> Bool {
        try connection.query("UPDATE tenants SET sms_prefixes = \(prefixes) WHERE slug = \(slug)").affectedRows == 1
    }

    /// Creates a tenant; a taken slug surfaces as `DatabaseError.Code.uniqueViolation`.
    public func create(slug: String, name: String, registration: Tenant.Registration, on connection: PostgresConnection) throws -> Tenant {
        let row = try connection.query("""
            INSERT INTO tenants (slug, name, registration) VALUES (\(slug), \(name), \(registration.rawValue))
            RETURNING id, slug, name, registration, created_at, retention_days, locale
            """).rows[0]
        return try decode(row)
    }

    public func find(slug: String, on connection: PostgresConnection) throws -> Tenant? {
        try connection.query("""
            SELECT id, slug, name, registration, created_at, retention_days, locale FROM tenants WHERE slug = \(slug)
            """).first.map(decode)
    }

    public func list(on connection: PostgresConnection) throws -> [Tenant] {
        try connection.query("SELECT id, slug, name, registration, created_at, retention_days, locale FROM tenants ORDER BY slug").rows.map(decode)
    }

    fileprivate func decode(_ row: PostgresRow) throws -> Tenant {
        let registration = try row.decode(String.self, "registration")
        guard let parsed = Tenant.Registration(rawValue: registration) else {
            throw DatabaseError(.decoding, "tenant registration '\(registration)' is unknown", column: "registration")
        }
        return Tenant(
            id: try row.decode(UUID.self, "id"),
            slug: try row.decode(String.self, "slug"),
            name: try row.decode(String.self, "name"),
            registration: parsed,
            createdAt: try row.decode(Date.self, "created_at"),
            retentionDays: try row.decode(Int?.self, "retention_days"),
            locale: try row.decode(String.self, "locale"))
    }
}

extension TenantStore {
    /// A page of tenants in slug order, starting after the slug `after` (keyset pagination).
    public func list(after: String?, limit: Int, on connection: PostgresConnection) throws -> [Tenant] {
        try connection.query("""
            SELECT id, slug, name, registration, created_at, retention_days, locale FROM tenants
            WHERE \(after)::text IS NULL OR slug > \(after) ORDER BY slug LIMIT \(limit)
            """).rows.map(decode)
    }
}

extension TenantStore {
    /// Sets how many days the tenant's groups keep their events (nil: for good); the tenant, or
    /// nil when no tenant has the slug.
    public func setRetention(slug: String, days: Int?, on connection: PostgresConnection) throws -> Tenant? {
        try connection.query("""
            UPDATE tenants SET retention_days = \(days) WHERE slug = \(slug)
            RETURNING id, slug, name, registration, created_at, retention_days, locale
            """).first.map(decode)
    }

    public func find(id: UUID, on connection: PostgresConnection) throws -> Tenant? {
        try connection.query("""
            SELECT id, slug, name, registration, created_at, retention_days, locale FROM tenants WHERE id = \(id)
            """).first.map(decode)
    }
}

extension TenantStore {
    /// Renames a tenant, changes how people join it or its language; nil leaves a field as it
    /// is. Nil when no tenant has the slug.
    public func update(slug: String, name: String?, registration: Tenant.Registration?, locale: String? = nil,
                       on connection: PostgresConnection) throws -> Tenant? {
        try connection.query("""
            UPDATE tenants SET name = coalesce(\(name), name), registration = coalesce(\(registration?.rawValue), registration),
                               locale = coalesce(\(locale), locale)
            WHERE slug = \(slug)
            RETURNING id, slug, name, registration, created_at, retention_days, locale
            """).first.map(decode)
    }
}

extension TenantStore {
    /// The default area of the tenant's groups, as stored JSON text; `.none` when no tenant has the slug.
    public func defaultArea(slug: String, on connection: PostgresConnection) throws -> String?? {
        guard let row = try connection.query("SELECT default_area::text AS area FROM tenants WHERE slug = \(slug)").first else { return .none }
        return .some(try row.decode(String?.self, "area"))
    }

    /// Sets (JSON text checked by the caller) or removes the default area of the tenant's
    /// groups; false when no tenant has the slug.
    public func setDefaultArea(slug: String, to area: String?, on connection: PostgresConnection) throws -> Bool {
        try connection.query("UPDATE tenants SET default_area = \(area.map(RawJSON.init))::jsonb WHERE slug = \(slug)").affectedRows == 1
    }
}
