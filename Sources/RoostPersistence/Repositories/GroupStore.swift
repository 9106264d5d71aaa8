import Foundation
import RoostProtocol

/// A watch group as its members see it.
public struct WatchGroup: Sendable, Equatable {
    public let id: UUID
    public let name: String
    public let description: String
    public let lastSeq: Int64
    public let createdAt: Date
    /// Seconds an open red alert waits for an `on_my_way` answer before it escalates; nil: never.
    public let escalateAfterSeconds: Int?
    /// Members whose home is this near an alert get its push marked critical.
    public let nearbyMeters: Int
    /// The group's own retention in days (its tenant's may be shorter); nil: the tenant's.
    public let retentionDays: Int?
    /// The first seq retention has kept: a cursor below `oldestSeq - 1` has missed events.
    public let oldestSeq: Int64
    /// Whether official warnings (CAP feeds) reach the group, and from which severity.
    public let feeds: FeedSetting
    /// Drill mode: a feed's Test and Exercise messages reach the group too.
    public let drill: Bool
}

/// A group's taking of official warnings (`PATCH /v1/groups/{gid}` `feeds`).
public struct FeedSetting: Sendable, Equatable {
    public let enabled: Bool
    /// info, amber or red: warnings below it are left out.
    public let minSeverity: String

    public init(enabled: Bool, minSeverity: String) {
        self.enabled = enabled
        self.minSeverity = minSeverity
    }
}

/// A group setting a change may leave alone, set, or (where it may be null) clear.
public enum SettingChange<Value: Sendable & Equatable>: Sendable, Equatable {
    case unchanged
    case set(Value)
}

/// One of the caller's groups in `GET /v1/groups`.
public struct GroupSummary: Sendable, Equatable {
    public let id: UUID
    public let name: String
    public let role: String
    public let lastSeq: Int64
    public let openAlerts: Int
    /// Messages by others after the caller's read marker (counted up to `GroupStore.unreadCap`).
    public let unread: Int
    /// Alerts among them.
    public let unreadAlerts: Int
    /// The newest message, or nil in a group with none.
    public let lastMessage: LastMessage?
}

/// A group's newest message as its list shows it.
public struct LastMessage: Sendable, Equatable {
    public let seq: Int64
    public let kind: String
    /// At most 140 characters.
    public let text: String
    public let authorName: String
    /// RFC 3339 with milliseconds, as every time of the API.
    public let createdAt: String
}

/// Groups and memberships, in a tenant transaction. Every membership change goes through
/// `GroupEventLog.append`.
public struct GroupStore: Sendable {
    public init() {}

    /// A new group owned by `owner`, whose joining is the group's first event.
    public func create(tenant: UUID, owner: UUID, name: String, description: String, on connection: PostgresConnection) throws -> WatchGroup {
        // The group and its event counter (`group_seqs`), which its events hang from.
        let id = try connection.query("""
            WITH created AS (
                INSERT INTO groups (tenant_id, name, description, created_by) VALUES (\(tenant), \(name), \(description), \(owner))
                RETURNING tenant_id, id)
            INSERT INTO group_seqs (tenant_id, group_id) SELECT tenant_id, id FROM created RETURNING group_id AS id
            """).rows[0].decode(UUID.self, "id")
        try connection.query("""
            INSERT INTO memberships (tenant_id, group_id, user_id, role) VALUES (\(tenant), \(id), \(owner), 'owner')
            """)
        let data = #"{"user_id":"\#(owner.lowercasedText)","role":"owner"}"#
        try GroupEventLog().append(tenant: tenant, group: id, event: .memberJoined, actorType: .user, actorID: owner,
                                       data: RawJSON(data), subject: owner, on: connection)
        try TemplateStore().replace(tenant: tenant, group: id, with: TemplateStore.defaults, on: connection)
        try RetentionStore().scheduleIfKept(tenant: tenant, group: id, on: connection)
        return try group(id: id, on: connection)!
    }

    public func group(id: UUID, on connection: PostgresConnection) throws -> WatchGroup? {
        try connection.query("""
            SELECT g.id, g.name, g.description, s.last_seq, g.created_at, g.escalate_after_s, g.nearby_m, g.retention_days,
                   g.purged_through + 1 AS oldest_seq, g.feeds_enabled, g.feeds_min_severity, g.drill
            FROM groups g JOIN group_seqs s ON s.tenant_id = g.tenant_id AND s.group_id = g.id WHERE g.id = \(id)
            """).first.map {
            WatchGroup(id: try $0.decode(UUID.self, "id"), name: try $0.decode(String.self, "name"),
                       description: try $0.decode(String.self, "description"), lastSeq: try $0.decode(Int64.self, "last_seq"),
                       createdAt: try $0.decode(Date.self, "created_at"), escalateAfterSeconds: try $0.decode(Int?.self, "escalate_after_s"),
                       nearbyMeters: try $0.decode(Int.self, "nearby_m"), retentionDays: try $0.decode(Int?.self, "retention_days"),
                       oldestSeq: try $0.decode(Int64.self, "oldest_seq"),
                       feeds: FeedSetting(enabled: try $0.decode(Bool.self, "feeds_enabled"), minSeverity: try $0.decode(String.self, "feeds_min_severity")),
                       drill: try $0.decode(Bool.self, "drill"))
        }
    }

    /// The caller's role in a group, or nil when not a member (the API then answers 404).
    public func role(of user: UUID, in group: UUID, on connection: PostgresConnection) throws -> Role? {
        try connection.query("SELECT role FROM memberships WHERE group_id = \(group) AND user_id = \(user)").first.map { Role(try $0.decode(String.self, "role")) }
    }

    /// Unread counts stop here: a list of groups costs the same for a member who never reads.
    public static let unreadCap = 1000

    /// The ids and newest seqs of the user's groups (what a stream subscribes to): a tenant
    /// coordinator's, every group of the tenant.
    public func subscriptions(of user: UUID, on connection: PostgresConnection) throws -> [(group: UUID, lastSeq: Int64)] {
        try connection.query("""
            SELECT s.group_id AS id, s.last_seq FROM memberships m JOIN group_seqs s ON s.tenant_id = m.tenant_id AND s.group_id = m.group_id
            WHERE m.user_id = \(user)
            UNION
            SELECT s.group_id, s.last_seq FROM group_seqs s WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = \(user) AND u.coordinator)
            """).rows.map { (try $0.decode(UUID.self, "id"), try $0.decode(Int64.self, "last_seq")) }
    }

    /// Whether `user` may follow `group`'s log: a member, or a coordinator of its tenant.
    public func mayFollow(_ group: UUID, user: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            SELECT EXISTS (SELECT 1 FROM memberships WHERE group_id = \(group) AND user_id = \(user))
                OR EXISTS (SELECT 1 FROM users u WHERE u.id = \(user) AND u.coordinator AND EXISTS (SELECT 1 FROM groups WHERE id = \(group))) AS may
            """).rows[0].decode(Bool.self, "may")
    }

    /// Where each of `groups` stands (its `last_seq`), whatever their tenants, in one statement
    /// (`roost_group_standings`, sql/0024, which reads each tenant's with row security in force);
    /// a group that is not its tenant's is left out. Outside any tenant's transaction.
    public func standings(of groups: [(tenant: UUID, group: UUID)], on connection: PostgresConnection) throws
        -> [(tenant: UUID, group: UUID, lastSeq: Int64)]
    {
        guard !groups.isEmpty else { return [] }
        return try connection.query("""
            SELECT tenant_id, group_id, last_seq
            FROM roost_group_standings(\(groups.map(\.tenant))::uuid[], \(groups.map(\.group))::uuid[])
            """).rows.map {
            (try $0.decode(UUID.self, "tenant_id"), try $0.decode(UUID.self, "group_id"), try $0.decode(Int64.self, "last_seq"))
        }
    }

    /// The caller's groups (a tenant coordinator's: every group) by name with their open alert counts, unread counts and last message,
    /// in one query of index scans (each count reads at most `unreadCap` rows): at most `limit`
    /// of them after the group named `after` (a name and an id, as the previous page ended).
    public func groups(of user: UUID, after: (name: String, id: UUID)?, limit: Int, on connection: PostgresConnection) throws -> [GroupSummary] {
        try connection.query("""
            SELECT g.id, g.name, m.role, s.last_seq,
                   (SELECT count(*) FROM alerts a WHERE a.tenant_id = g.tenant_id AND a.group_id = g.id AND a.status = 'open') AS open_alerts,
                   (SELECT count(*) FROM (SELECT 1 FROM messages x WHERE x.tenant_id = g.tenant_id AND x.group_id = g.id AND x.seq > m.read_seq
                       AND x.author_id IS DISTINCT FROM m.user_id LIMIT \(Self.unreadCap)) u) AS unread,
                   (SELECT count(*) FROM (SELECT 1 FROM messages x WHERE x.tenant_id = g.tenant_id AND x.group_id = g.id AND x.seq > m.read_seq
                       AND x.author_id IS DISTINCT FROM m.user_id AND x.kind = 'alert' LIMIT \(Self.unreadCap)) u) AS unread_alerts,
                   lm.seq AS last_seq_message, lm.kind AS last_kind, lm.text AS last_text, lm.author_name AS last_author, lm.created_at AS last_at
            FROM (SELECT tenant_id, group_id, user_id, role, read_seq FROM memberships WHERE user_id = \(user)
                  UNION ALL
                  -- A tenant coordinator sees every other group as its admin, all of it read.
                  SELECT c.tenant_id, c.id, \(user), 'admin', cs.last_seq
                  FROM groups c JOIN group_seqs cs ON cs.tenant_id = c.tenant_id AND cs.group_id = c.id
                  WHERE EXISTS (SELECT 1 FROM users cu WHERE cu.id = \(user) AND cu.coordinator)
                    AND NOT EXISTS (SELECT 1 FROM memberships cm WHERE cm.tenant_id = c.tenant_id AND cm.group_id = c.id AND cm.user_id = \(user))) m
            JOIN groups g ON g.tenant_id = m.tenant_id AND g.id = m.group_id
            JOIN group_seqs s ON s.tenant_id = g.tenant_id AND s.group_id = g.id
            LEFT JOIN LATERAL (
                SELECT x.seq, x.kind, left(x.text, 140) AS text, coalesce(xu.display_name, xb.name, x.author_type) AS author_name,
                       to_char(x.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at
                FROM messages x
                LEFT JOIN users xu ON xu.tenant_id = x.tenant_id AND xu.id = x.author_id AND x.author_type = 'user'
                LEFT JOIN bridges xb ON xb.tenant_id = x.tenant_id AND xb.id = x.author_id AND x.author_type = 'bridge'
                WHERE x.tenant_id = g.tenant_id AND x.group_id = g.id ORDER BY x.seq DESC LIMIT 1) lm ON true
            WHERE (\(after?.id)::uuid IS NULL OR (g.name, g.id) > (\(after?.name)::text, \(after?.id)::uuid))
            ORDER BY g.name, g.id LIMIT \(limit)
            """).rows.map { row in
            let last = try row.decode(Int64?.self, "last_seq_message").map { seq in
                LastMessage(seq: seq, kind: try row.decode(String.self, "last_kind"), text: try row.decode(String.self, "last_text"),
                            authorName: try row.decode(String.self, "last_author"), createdAt: try row.decode(String.self, "last_at"))
            }
            return GroupSummary(id: try row.decode(UUID.self, "id"), name: try row.decode(String.self, "name"), role: try row.decode(String.self, "role"),
                                lastSeq: try row.decode(Int64.self, "last_seq"), openAlerts: try row.decode(Int.self, "open_alerts"),
                                unread: try row.decode(Int.self, "unread"), unreadAlerts: try row.decode(Int.self, "unread_alerts"), lastMessage: last)
        }
    }

    /// Makes `user` a member with `role`, reading from the group's newest seq on (what came
    /// before they joined is not unread).
    public func addMember(tenant: UUID, group: UUID, user: UUID, role: Role, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO memberships (tenant_id, group_id, user_id, role, read_seq)
            SELECT \(tenant), \(group), \(user), \(role.name), last_seq FROM group_seqs WHERE group_id = \(group)
            """)
    }

    /// Moves the member's read marker forward to `seq` (never back, never past the group's
    /// newest seq); the marker now, and whether it moved.
    public func markRead(group: UUID, user: UUID, through seq: Int64, on connection: PostgresConnection) throws -> (marker: Int64, moved: Bool)? {
        guard let row = try connection.query("""
            WITH target AS (
                SELECT m.read_seq AS before, GREATEST(m.read_seq, LEAST(\(seq), s.last_seq)) AS after
                FROM memberships m JOIN group_seqs s ON s.tenant_id = m.tenant_id AND s.group_id = m.group_id
                WHERE m.group_id = \(group) AND m.user_id = \(user) FOR UPDATE OF m)
            UPDATE memberships m SET read_seq = target.after FROM target
            WHERE m.group_id = \(group) AND m.user_id = \(user)
            RETURNING target.before, target.after
            """).first else { return nil }
        let (before, after) = (try row.decode(Int64.self, "before"), try row.decode(Int64.self, "after"))
        return (after, after != before)
    }
}

/// A member as `GET /v1/groups/{gid}/members` lists them.
public struct Member: Sendable, Equatable {
    public let userID: UUID
    public let displayName: String
    public let role: String
    public let joinedAt: Date
}

/// Where a page of a group's members continues: the previous page's last member's place in the
/// order (role, then when they joined, then id).
public struct MemberPosition: Sendable, Equatable {
    public let rank: Int
    public let joinedMicros: Int64
    public let user: UUID

    public init(rank: Int, joinedMicros: Int64, user: UUID) {
        (self.rank, self.joinedMicros, self.user) = (rank, joinedMicros, user)
    }
}

extension GroupStore {
    /// A group's members, the owner first, then admins, then members, each by when they joined:
    /// at most `limit` of them after `after` (the previous page's last position), each with its
    /// position in that order as the database ranks it.
    public func members(of group: UUID, after: MemberPosition? = nil, limit: Int, on connection: PostgresConnection) throws
        -> [(member: Member, position: MemberPosition)]
    {
        try connection.query("""
            SELECT m.user_id, u.display_name, m.role, m.joined_at, roost_role_rank(m.role) AS rank,
                   (extract(epoch FROM m.joined_at) * 1000000)::int8 AS joined_micros
            FROM memberships m JOIN users u ON u.tenant_id = m.tenant_id AND u.id = m.user_id
            WHERE m.group_id = \(group)
              AND (\(after?.rank)::int IS NULL
                   OR (roost_role_rank(m.role), m.joined_at, m.user_id)
                      > (\(after?.rank)::int, 'epoch'::timestamptz + \(after?.joinedMicros)::int8 * interval '1 microsecond', \(after?.user)::uuid))
            ORDER BY roost_role_rank(m.role), m.joined_at, m.user_id LIMIT \(limit)
            """).rows.map { row in
            let member = try decodeMember(row)
            return (member, MemberPosition(rank: try row.decode(Int.self, "rank"), joinedMicros: try row.decode(Int64.self, "joined_micros"),
                                           user: member.userID))
        }
    }

    /// One member of a group, or nil.
    public func member(_ user: UUID, of group: UUID, on connection: PostgresConnection) throws -> Member? {
        try connection.query("""
            SELECT m.user_id, u.display_name, m.role, m.joined_at
            FROM memberships m JOIN users u ON u.tenant_id = m.tenant_id AND u.id = m.user_id
            WHERE m.group_id = \(group) AND m.user_id = \(user)
            """).first.map(decodeMember)
    }

    private func decodeMember(_ row: PostgresRow) throws -> Member {
        Member(userID: try row.decode(UUID.self, "user_id"), displayName: try row.decode(String.self, "display_name"),
               role: try row.decode(String.self, "role"), joinedAt: try row.decode(Date.self, "joined_at"))
    }

    /// Changes a group's name, description and settings; nil (or `.unchanged`) leaves a field as it is.
    public func update(group: UUID, name: String?, description: String?, escalateAfterSeconds: SettingChange<Int?> = .unchanged,
                       nearbyMeters: Int? = nil, retentionDays: SettingChange<Int?> = .unchanged, feedsEnabled: Bool? = nil, feedsMinSeverity: String? = nil, drill: Bool? = nil,
                       on connection: PostgresConnection) throws {
        var escalation: Int?
        var setsEscalation = false
        if case .set(let value) = escalateAfterSeconds { (escalation, setsEscalation) = (value, true) }
        var retention: Int?
        var setsRetention = false
        if case .set(let value) = retentionDays { (retention, setsRetention) = (value, true) }
        try connection.query("""
            UPDATE groups SET name = coalesce(\(name), name), description = coalesce(\(description), description),
                              escalate_after_s = CASE WHEN \(setsEscalation) THEN \(escalation)::integer ELSE escalate_after_s END,
                              nearby_m = coalesce(\(nearbyMeters)::integer, nearby_m),
                              retention_days = CASE WHEN \(setsRetention) THEN \(retention)::integer ELSE retention_days END,
                              feeds_enabled = coalesce(\(feedsEnabled)::boolean, feeds_enabled),
                              feeds_min_severity = coalesce(\(feedsMinSeverity)::text, feeds_min_severity),
                              drill = coalesce(\(drill)::boolean, drill), updated_at = now()
            WHERE id = \(group)
            """)
    }

    /// Deletes a group with everything in it, and tells every node (its members' streams get
    /// `group.removed`).
    public func delete(group: UUID, on connection: PostgresConnection) throws {
        guard let tenant = try connection.query("DELETE FROM groups WHERE id = \(group) RETURNING tenant_id").first?
            .decode(UUID.self, "tenant_id") else { return }
        try GroupEventLog.notify(.groupDeleted(tenant: tenant, group: group), on: connection)
    }

    public func setRole(_ role: Role, of user: UUID, in group: UUID, on connection: PostgresConnection) throws {
        try connection.query("UPDATE memberships SET role = \(role.name) WHERE group_id = \(group) AND user_id = \(user)")
    }

    public func removeMember(_ user: UUID, from group: UUID, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM memberships WHERE group_id = \(group) AND user_id = \(user)")
    }
}

extension GroupStore {
    /// Every group the user is in with their role, locked for a change that ends them all.
    public func memberships(of user: UUID, on connection: PostgresConnection) throws -> [(group: UUID, role: String)] {
        try connection.query("""
            SELECT group_id, role FROM memberships WHERE user_id = \(user) ORDER BY group_id FOR UPDATE
            """).rows.map { (try $0.decode(UUID.self, "group_id"), try $0.decode(String.self, "role")) }
    }

    /// Who inherits a group its owner leaves for good: the longest-standing admin, else the
    /// longest-standing member, else nobody.
    public func successor(in group: UUID, excluding owner: UUID, on connection: PostgresConnection) throws -> (user: UUID, role: String)? {
        try connection.query("""
            SELECT user_id, role FROM memberships WHERE group_id = \(group) AND user_id <> \(owner)
            ORDER BY CASE role WHEN 'admin' THEN 0 ELSE 1 END, joined_at, user_id
            LIMIT 1
            """).first.map { (try $0.decode(UUID.self, "user_id"), try $0.decode(String.self, "role")) }
    }
}

extension GroupStore {
    /// Locks the group's event counter for the rest of the transaction, the row appending an
    /// event locks, so a change that locks an alert and then appends must take this lock first:
    /// otherwise it and a concurrent post (which holds the counter and then waits on the alert's
    /// unique index) wait for each other.
    public func lock(_ group: UUID, on connection: PostgresConnection) throws {
        try connection.query("SELECT 1 FROM group_seqs WHERE group_id = \(group) FOR UPDATE")
    }
}

// MARK: - Areas

extension GroupStore {
    /// The group's own area and its tenant's default, as stored JSON text.
    public func area(of group: UUID, on connection: PostgresConnection) throws -> (own: String?, tenantDefault: String?)? {
        try connection.query("""
            SELECT g.area::text AS own, t.default_area::text AS tenant_default FROM groups g JOIN tenants t ON t.id = g.tenant_id
            WHERE g.id = \(group)
            """).first.map { (try $0.decode(String?.self, "own"), try $0.decode(String?.self, "tenant_default")) }
    }

    /// Sets the group's own area (JSON text checked by the caller), or removes it (nil: the
    /// tenant's default applies again).
    public func setArea(of group: UUID, to area: String?, on connection: PostgresConnection) throws {
        try connection.query("UPDATE groups SET area = \(area.map(RawJSON.init))::jsonb WHERE id = \(group)")
    }
}
