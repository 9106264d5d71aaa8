import Foundation
import RoostProtocol

/// A CAP feed the operator configured (sql/0039_cap_feeds.sql).
public struct CAPFeedRow: Sendable, Equatable {
    public let id: UUID
    public let url: String
    public let name: String
    /// nil: every tenant.
    public let tenants: [UUID]?
    public let pollSeconds: Int
    public let sender: String?
    public let etag: String?
    public let lastModified: String?
    public let nextPollAt: Date
    public let polledAt: Date?
    public let lastStatus: String?
}

/// A group that takes official warnings: its area (its own or its tenant's), least severity
/// and drill mode.
public struct FeedGroup: Sendable, Equatable {
    public let id: UUID
    public let areaJSON: String
    public let minSeverity: String
    public let drill: Bool

    public init(id: UUID, areaJSON: String, minSeverity: String, drill: Bool) {
        (self.id, self.areaJSON, self.minSeverity, self.drill) = (id, areaJSON, minSeverity, drill)
    }
}

/// Official warnings (issue #60): the operator's feeds, the poll's lease and memory, the groups
/// that take warnings, and which alert each warning became in a group.
public struct FeedStore: Sendable {
    public init() {}

    static let columns = """
        id, url, name, all_tenants, tenant_ids, poll_s, sender, etag, last_modified, next_poll_at, polled_at, last_status
        """

    static func row(_ row: PostgresRow) throws -> CAPFeedRow {
        CAPFeedRow(id: try row.decode(UUID.self, "id"), url: try row.decode(String.self, "url"), name: try row.decode(String.self, "name"),
                   tenants: try row.decode(Bool.self, "all_tenants") ? nil : try row.decode([UUID].self, "tenant_ids"),
                   pollSeconds: try row.decode(Int.self, "poll_s"), sender: try row.decode(String?.self, "sender"),
                   etag: try row.decode(String?.self, "etag"), lastModified: try row.decode(String?.self, "last_modified"),
                   nextPollAt: try row.decode(Date.self, "next_poll_at"), polledAt: try row.decode(Date?.self, "polled_at"),
                   lastStatus: try row.decode(String?.self, "last_status"))
    }

    // MARK: - The operator's feeds

    /// The URL is another feed's.
    public struct Taken: Error {}

    public func add(url: String, name: String, tenants: [UUID]?, pollSeconds: Int, sender: String?, on connection: PostgresConnection) throws -> CAPFeedRow {
        guard let row = try connection.query("""
            INSERT INTO cap_feeds (id, url, name, all_tenants, tenant_ids, poll_s, sender)
            VALUES (\(UUID()), \(url), \(name), \(tenants == nil), \(tenants ?? [])::uuid[], \(pollSeconds), \(sender))
            ON CONFLICT (url) DO NOTHING
            RETURNING \(unsafeRaw: Self.columns)
            """).first else { throw Taken() }
        return try Self.row(row)
    }

    public func feeds(on connection: PostgresConnection) throws -> [CAPFeedRow] {
        try connection.query("SELECT \(unsafeRaw: Self.columns) FROM cap_feeds ORDER BY created_at, id").rows.map(Self.row)
    }

    public func feed(_ id: UUID, on connection: PostgresConnection) throws -> CAPFeedRow? {
        try connection.query("SELECT \(unsafeRaw: Self.columns) FROM cap_feeds WHERE id = \(id)").first.map(Self.row)
    }

    /// Removes a feed; its warnings' alerts stay as they are (closed or not) in their groups.
    public func remove(_ id: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("DELETE FROM cap_feeds WHERE id = \(id)").affectedRows == 1
    }

    // MARK: - Polling

    /// Claims the feed most overdue, moving its next poll `lease` seconds on first, so no other
    /// node polls it meanwhile (a node that dies mid-poll leaves it to another after the lease).
    /// Runs in its own short transaction, before the fetch: no row is locked while a feed answers.
    public func claimDue(lease: Int, on connection: PostgresConnection) throws -> CAPFeedRow? {
        try connection.query("""
            UPDATE cap_feeds SET next_poll_at = now() + \(lease) * interval '1 second'
            WHERE id = (SELECT id FROM cap_feeds WHERE next_poll_at <= now() ORDER BY next_poll_at LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING \(unsafeRaw: Self.columns)
            """).first.map(Self.row)
    }

    /// Makes a feed due now (the operator's "poll now"); false when there is no such feed.
    public func pollSoon(_ id: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("UPDATE cap_feeds SET next_poll_at = now() WHERE id = \(id)").affectedRows == 1
    }

    /// What the next poll's conditional GET sends.
    public enum Validators: Sendable {
        /// The ones it has (the answer was a 304, or the poll failed before an answer).
        case keep
        /// The answer's (nil: none): the feed was read whole.
        case set(etag: String?, lastModified: String?)
    }

    /// Records a poll's end: what it came to, the validators for the next conditional GET, and
    /// the next poll after `wait` seconds.
    public func finish(_ feed: UUID, status: String, validators: Validators, wait: Int, on connection: PostgresConnection) throws {
        let (keep, etag, lastModified): (Bool, String?, String?) = switch validators {
        case .keep: (true, nil, nil)
        case .set(let etag, let lastModified): (false, etag.map { String($0.prefix(500)) }, lastModified.map { String($0.prefix(100)) })
        }
        try connection.query("""
            UPDATE cap_feeds SET last_status = \(String(status.prefix(500))), polled_at = now(),
                etag = CASE WHEN \(keep) THEN etag ELSE \(etag)::text END,
                last_modified = CASE WHEN \(keep) THEN last_modified ELSE \(lastModified)::text END,
                next_poll_at = now() + \(wait) * interval '1 second'
            WHERE id = \(feed)
            """)
    }

    /// When each of `keys` was last taken, as the feed dated it then.
    public func taken(feed: UUID, keys: [String], on connection: PostgresConnection) throws -> [String: String] {
        guard !keys.isEmpty else { return [:] }
        var taken: [String: String] = [:]
        for row in try connection.query("""
            SELECT key, updated FROM cap_feed_entries WHERE feed_id = \(feed) AND key = ANY(\(keys)::text[])
            """).rows {
            taken[try row.decode(String.self, "key")] = try row.decode(String.self, "updated")
        }
        return taken
    }

    /// Remembers an entry as taken, and that the feed still lists `listed` (its other entries
    /// are forgotten a week after it stops listing them).
    public func markTaken(feed: UUID, key: String, updated: String, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO cap_feed_entries (feed_id, key, updated) VALUES (\(feed), \(String(key.prefix(2048))), \(String(updated.prefix(100))))
            ON CONFLICT (feed_id, key) DO UPDATE SET updated = excluded.updated, listed_at = now()
            """)
    }

    public func stillListed(feed: UUID, keys: [String], on connection: PostgresConnection) throws {
        try connection.query("""
            UPDATE cap_feed_entries SET listed_at = now() WHERE feed_id = \(feed) AND key = ANY(\(keys)::text[])
            """)
        try connection.query("DELETE FROM cap_feed_entries WHERE feed_id = \(feed) AND listed_at < now() - interval '7 days'")
    }

    /// The tenants a feed reaches: its own list, or every tenant.
    public func tenants(of feed: CAPFeedRow, on connection: PostgresConnection) throws -> [UUID] {
        if let tenants = feed.tenants { return tenants }
        return try connection.query("SELECT id FROM tenants ORDER BY id").rows.map { try $0.decode(UUID.self, "id") }
    }

    // MARK: - In a tenant's transaction

    /// The tenant's groups that take warnings and have an area (their own, else the tenant's).
    public func groups(on connection: PostgresConnection) throws -> [FeedGroup] {
        try connection.query("""
            SELECT g.id, coalesce(g.area, t.default_area)::text AS area, g.feeds_min_severity, g.drill
            FROM groups g JOIN tenants t ON t.id = g.tenant_id
            WHERE g.feeds_enabled AND coalesce(g.area, t.default_area) IS NOT NULL
            ORDER BY g.id
            """).rows.map {
            FeedGroup(id: try $0.decode(UUID.self, "id"), areaJSON: try $0.decode(String.self, "area"),
                      minSeverity: try $0.decode(String.self, "feeds_min_severity"), drill: try $0.decode(Bool.self, "drill"))
        }
    }

    /// The alert a warning became in the group, under any of the (sender, identifier) pairs it
    /// was published as: its seq and whether it is open.
    public func warning(group: UUID, keys: [(sender: String, identifier: String)], on connection: PostgresConnection) throws
        -> (seq: Int64, open: Bool)?
    {
        guard !keys.isEmpty else { return nil }
        return try connection.query("""
            SELECT w.seq, a.status = 'open' AS open FROM cap_warnings w JOIN alerts a ON a.group_id = w.group_id AND a.seq = w.seq
            WHERE w.group_id = \(group) AND (w.sender, w.identifier) IN (SELECT * FROM unnest(\(keys.map(\.sender))::text[], \(keys.map(\.identifier))::text[]))
            ORDER BY w.seq DESC LIMIT 1
            """).first.map { (try $0.decode(Int64.self, "seq"), try $0.decode(Bool.self, "open")) }
    }

    /// Records that the warning published as `(sender, identifier)` is the alert at `seq`.
    public func recordWarning(tenant: UUID, group: UUID, sender: String, identifier: String, seq: Int64, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO cap_warnings (tenant_id, group_id, sender, identifier, seq)
            VALUES (\(tenant), \(group), \(String(sender.prefix(500))), \(String(identifier.prefix(500))), \(seq))
            ON CONFLICT DO NOTHING
            """)
    }

    /// Changes a warning's alert in place (its publisher's Update): text, severity, details and
    /// place, with an `alert.updated` event carrying them; the alert's JSON after.
    public func update(tenant: UUID, group: UUID, seq: Int64, text: String, severity: String, details: String, location: String?,
                       on connection: PostgresConnection) throws -> String {
        try connection.query("""
            UPDATE messages SET text = \(text), location = \(location.map(RawJSON.init)) WHERE group_id = \(group) AND seq = \(seq)
            """)
        try connection.query("""
            UPDATE alerts SET severity = \(severity), details = \(RawJSON(details)) WHERE group_id = \(group) AND seq = \(seq)
            """)
        let data = "{\"seq\":\(seq),\"text\":\(JSONString.quote(text)),\"severity\":\(JSONString.quote(severity)),\"details\":\(details),"
            + "\"location\":\(location ?? "null")}"
        try GroupEventLog().append(tenant: tenant, group: group, event: .alertUpdated, actorType: .feed, actorID: nil, data: RawJSON(data),
                                   on: connection)
        return try MessageStore().message(group: group, seq: seq, on: connection)!
    }

    /// Closes the alert when the warning expires (replacing an earlier expiry).
    public func scheduleExpiry(tenant: UUID, group: UUID, seq: Int64, at expires: Date, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO cap_expiries (message_id, tenant_id, group_id, seq, due_at)
            SELECT m.id, \(tenant), \(group), \(seq), \(expires) FROM messages m WHERE m.group_id = \(group) AND m.seq = \(seq)
            ON CONFLICT (message_id) DO UPDATE SET due_at = excluded.due_at, attempts = 0, parked_at = NULL
            """)
    }

    /// The alert a claimed expiry closes.
    public func expiring(_ message: UUID, on connection: PostgresConnection) throws -> (group: UUID, seq: Int64)? {
        try connection.query("SELECT group_id, seq FROM cap_expiries WHERE message_id = \(message)").first.map {
            (try $0.decode(UUID.self, "group_id"), try $0.decode(Int64.self, "seq"))
        }
    }

    public func dropExpiry(_ message: UUID, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM cap_expiries WHERE message_id = \(message)")
    }
}
