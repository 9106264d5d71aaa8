import Foundation
import RoostProtocol

/// One change of a group's alert, as the group's CAP feed publishes it: the event (the alert
/// raised, answered, escalated, repeated, closed or reopened) and the alert as it was raised.
public struct CAPChange: Sendable, Equatable {
    public let eventSeq: Int64
    public let event: GroupEventKind
    public let at: Date
    /// The change event's data, as JSON text.
    public let data: String
    public let alertSeq: Int64
    public let authorType: ActorType
    /// The `message.created` event's data: the message as it was raised (its text, severity
    /// and place then; later changes are entries of their own).
    public let raised: String
    public let raisedAt: Date
}

/// What a group's CAP documents say of the group and its tenant.
public struct CAPGroup: Sendable, Equatable {
    public let name: String
    public let drill: Bool
    /// The group's area, or its tenant's, as JSON text.
    public let areaJSON: String?
    public let tenantSlug: String
    public let tenantName: String
    public let locale: String
}

/// A group's alerts as CAP (sql/0040_cap_out.sql): the token that reads them, and the changes
/// the feed lists. Every alert hidden from anyone (a duress alert, one for the managers only),
/// redacted, or itself an official warning (Roost does not republish what it took in) is left out.
public struct CAPOutStore: Sendable {
    public init() {}

    /// Gives the group a new token (its SHA-256), replacing any earlier one. In the tenant's transaction.
    public func setToken(_ hash: [UInt8], tenant: UUID, group: UUID, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM cap_tokens WHERE tenant_id = \(tenant) AND group_id = \(group)")
        try connection.query("INSERT INTO cap_tokens (token_hash, tenant_id, group_id) VALUES (\(Data(hash)), \(tenant), \(group))")
    }

    /// Whether the group had a token.
    public func removeToken(tenant: UUID, group: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("DELETE FROM cap_tokens WHERE tenant_id = \(tenant) AND group_id = \(group)").affectedRows == 1
    }

    /// The tenant of the group whose token hashes to `hash`, when it is `group`'s (outside any
    /// tenant's transaction: the index holds hashes and ids only).
    public func tenant(ofToken hash: [UInt8], group: UUID, on connection: PostgresConnection) throws -> UUID? {
        try connection.query("SELECT tenant_id FROM cap_tokens WHERE token_hash = \(Data(hash)) AND group_id = \(group)").first?
            .decode(UUID.self, "tenant_id")
    }

    /// In the tenant's transaction.
    public func group(_ group: UUID, on connection: PostgresConnection) throws -> CAPGroup? {
        try connection.query("""
            SELECT g.name, g.drill, coalesce(g.area, t.default_area)::text AS area, t.slug, t.name AS tenant_name, t.locale
            FROM groups g JOIN tenants t ON t.id = g.tenant_id WHERE g.id = \(group)
            """).first.map {
            CAPGroup(name: try $0.decode(String.self, "name"), drill: try $0.decode(Bool.self, "drill"), areaJSON: try $0.decode(String?.self, "area"),
                     tenantSlug: try $0.decode(String.self, "slug"), tenantName: try $0.decode(String.self, "tenant_name"),
                     locale: try $0.decode(String.self, "locale"))
        }
    }

    static let published: [GroupEventKind] = [.messageCreated, .alertAcknowledged, .alertEscalated, .alertRepeated, .alertClosed, .alertReopened]

    /// The group's latest alert changes, newest first (of one alert, with `alert`), in the tenant's transaction.
    public func changes(group: UUID, alert: Int64? = nil, limit: Int, on connection: PostgresConnection) throws -> [CAPChange] {
        try connection.query("""
            SELECT e.seq AS event_seq, e.event, e.created_at AS at, e.data::text AS data, m.seq AS alert_seq, m.author_type,
                   c.data::text AS raised, c.created_at AS raised_at
            FROM group_events e
            JOIN messages m ON m.tenant_id = e.tenant_id AND m.group_id = e.group_id
                 AND m.seq = CASE WHEN e.event = 'message.created' THEN e.seq ELSE (e.data->>'seq')::bigint END
            JOIN group_events c ON c.tenant_id = m.tenant_id AND c.group_id = m.group_id AND c.seq = m.seq
            WHERE e.group_id = \(group) AND e.event = ANY(\(Self.published.map(\.name))::text[])
              AND (\(alert)::bigint IS NULL OR m.seq = \(alert))
              AND m.kind = 'alert' AND m.hidden_from IS NULL AND e.hidden_from IS NULL AND m.redacted_at IS NULL
              AND m.author_type IN ('user', 'bridge', 'system')
            ORDER BY e.seq DESC LIMIT \(limit)
            """).rows.map {
            CAPChange(eventSeq: try $0.decode(Int64.self, "event_seq"), event: GroupEventKind(try $0.decode(String.self, "event")),
                      at: try $0.decode(Date.self, "at"), data: try $0.decode(String.self, "data"), alertSeq: try $0.decode(Int64.self, "alert_seq"),
                      authorType: ActorType(try $0.decode(String.self, "author_type")), raised: try $0.decode(String.self, "raised"),
                      raisedAt: try $0.decode(Date.self, "raised_at"))
        }
    }
}
