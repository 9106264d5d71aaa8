import Foundation

/// What one purge of a group did.
public struct RetentionPurge: Sendable, Equatable {
    public let group: UUID
    /// Events deleted (each with its message, alert, answers and recipients).
    public let deleted: Int
    /// The group's first kept seq: a cursor below `oldestSeq - 1` has missed something.
    public let oldestSeq: Int64
    /// Whether old events are left for the next round (the batch was full).
    public let more: Bool
}

/// Retention (sql/0020_retention.sql): the tenant's and the group's `retention_days`, the
/// purge of a group's events older than the shorter of them, and the jobs that schedule it.
/// The purge runs in the group's tenant transaction; the jobs are claimed across tenants.
public struct RetentionStore: Sendable {
    public init() {}

    /// Purges `group` now (its retention was set or shortened).
    public func schedule(tenant: UUID, group: UUID, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO retention_jobs (group_id, tenant_id) VALUES (\(group), \(tenant))
            ON CONFLICT (group_id) DO UPDATE SET due_at = now()
            """)
    }

    /// Purges every group of the transaction's tenant now (the tenant's retention was set or
    /// shortened); a group created later is scheduled by `scheduleIfKept`.
    public func scheduleAll(tenant: UUID, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO retention_jobs (group_id, tenant_id) SELECT id, tenant_id FROM groups WHERE tenant_id = \(tenant)
            ON CONFLICT (group_id) DO UPDATE SET due_at = now()
            """)
    }

    /// A new group of a tenant with a retention: its first purge is due once its first events
    /// can be old enough.
    public func scheduleIfKept(tenant: UUID, group: UUID, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO retention_jobs (group_id, tenant_id, due_at)
            SELECT \(group), id, now() + retention_days * interval '1 day' FROM tenants WHERE id = \(tenant) AND retention_days IS NOT NULL
            ON CONFLICT (group_id) DO NOTHING
            """)
    }

    /// The group's first kept seq (every event below it may be gone).
    public func oldestSeq(group: UUID, on connection: PostgresConnection) throws -> Int64? {
        try connection.query("SELECT purged_through + 1 AS oldest FROM groups WHERE id = \(group)").first?.decode(Int64.self, "oldest")
    }

    /// Purges, in the claiming transaction (its tenant set), `group`'s events older than its
    /// retention, at most `batch` seqs of them, oldest first, and those of closed alerts kept
    /// earlier; an open alert and the replies to it stay. The group's `purged_through` moves
    /// up in the same transaction. The job is due again next round (a second on, so one round
    /// never runs away with a huge history) when old events are left, else
    /// when the first kept event comes of age, but no sooner than `granularity` seconds on; it
    /// is deleted when neither the group nor its tenant keeps a retention. Nil when the group is gone.
    public func purge(group: UUID, batch: Int, granularity: Int, on connection: PostgresConnection) throws -> RetentionPurge? {
        guard let settings = try connection.query("""
            SELECT g.purged_through, s.last_seq, least(g.retention_days, t.retention_days) AS days
            FROM groups g JOIN group_seqs s ON s.tenant_id = g.tenant_id AND s.group_id = g.id JOIN tenants t ON t.id = g.tenant_id
            WHERE g.id = \(group)
            """).first else {
            try connection.query("DELETE FROM retention_jobs WHERE group_id = \(group)")
            return nil
        }
        let purgedThrough = try settings.decode(Int64.self, "purged_through")
        let lastSeq = try settings.decode(Int64.self, "last_seq")
        guard let days = try settings.decode(Int?.self, "days") else {
            try connection.query("DELETE FROM retention_jobs WHERE group_id = \(group)")
            return RetentionPurge(group: group, deleted: 0, oldestSeq: purgedThrough + 1, more: false)
        }
        // The first event young enough to keep, within this batch's seqs; read in seq order from
        // the last purge, so the scan costs what is purged.
        let window = purgedThrough + Int64(batch)
        let firstKept = try connection.query("""
            SELECT seq FROM group_events
            WHERE group_id = \(group) AND seq > \(purgedThrough) AND seq <= \(window)
              AND created_at >= now() - \(days) * interval '1 day'
            ORDER BY seq LIMIT 1
            """).first?.decode(Int64.self, "seq")
        let through = firstKept.map { $0 - 1 } ?? min(window, lastSeq)
        let deleted = try connection.query("""
            WITH open AS (SELECT seq FROM alerts WHERE group_id = \(group) AND status = 'open'),
            kept AS (SELECT seq FROM open
                     UNION SELECT m.seq FROM messages m JOIN open ON m.reply_to = open.seq WHERE m.group_id = \(group))
            DELETE FROM group_events WHERE group_id = \(group) AND seq <= \(through) AND seq NOT IN (SELECT seq FROM kept)
            """).affectedRows
        let oldest = max(purgedThrough, through) + 1
        let more = firstKept == nil && window < lastSeq
        try connection.query("UPDATE groups SET purged_through = \(oldest - 1) WHERE id = \(group) AND purged_through < \(oldest - 1)")
        try connection.query("""
            UPDATE retention_jobs SET attempts = 0, last_error = NULL, due_at = CASE WHEN \(more) THEN now() + interval '1 second' ELSE greatest(
                coalesce((SELECT created_at FROM group_events WHERE group_id = \(group) AND seq = \(oldest)), now()) + \(days) * interval '1 day',
                now() + \(granularity) * interval '1 second') END
            WHERE group_id = \(group)
            """)
        return RetentionPurge(group: group, deleted: deleted, oldestSeq: oldest, more: more)
    }
}
