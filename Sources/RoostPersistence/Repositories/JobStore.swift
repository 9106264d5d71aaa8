import Foundation

/// A kind of background job: its name in logs, metrics and `roost jobs`, and the table that
/// queues it. Every scheduled job kind is one of these, so failure handling is written once.
public struct JobKind: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    let table: String
    let idColumn: String
    /// The column a claim orders by and waits on: a failed job's next try is set here.
    let dueColumn: String
    /// What else a failure resets so the row is claimable again (e.g. a watch's `offline`).
    let onFailure: String

    public var description: String { name }

    /// A missed check-in's deadline (sql/0004_checkins.sql).
    public static let checkinDeadline = JobKind(name: "checkin_deadline", table: "checkin_deadlines", idColumn: "checkin_id",
                                                dueColumn: "due_at", onFailure: "")
    /// A bridge that fell silent (sql/0006_bridge_watch.sql).
    public static let bridgeWatch = JobKind(name: "bridge_watch", table: "bridge_watch", idColumn: "bridge_id",
                                            dueColumn: "silent_after", onFailure: ", offline = false")
    /// An open red alert's next escalation (sql/0011).
    public static let alertEscalation = JobKind(name: "alert_escalation", table: "alert_escalations", idColumn: "escalation_id",
                                                dueColumn: "due_at", onFailure: "")
    /// A live location sharing's coalesced notice or idle end (sql/0011).
    public static let liveLocation = JobKind(name: "live_location", table: "live_location_jobs", idColumn: "job_id",
                                             dueColumn: "due_at", onFailure: "")
    /// A check-in request nobody answered (sql/0017).
    public static let checkinRequestExpiry = JobKind(name: "checkin_request_expiry", table: "checkin_request_expiries", idColumn: "request_id",
                                                     dueColumn: "due_at", onFailure: "")
    /// A password reset request waiting for its code (sql/0018).
    public static let passwordReset = JobKind(name: "password_reset", table: "password_reset_jobs", idColumn: "request_id",
                                              dueColumn: "due_at", onFailure: "")
    /// A group's purge of what its retention no longer keeps (sql/0020).
    public static let retention = JobKind(name: "retention", table: "retention_jobs", idColumn: "group_id", dueColumn: "due_at", onFailure: "")
    /// An upload nobody linked, or one that never completed (sql/0021).
    public static let mediaExpiry = JobKind(name: "media_expiry", table: "media_expiries", idColumn: "media_id", dueColumn: "due_at", onFailure: "")
    /// An official warning's alert, closed when the warning expires (sql/0039).
    public static let capExpiry = JobKind(name: "cap_expiry", table: "cap_expiries", idColumn: "message_id", dueColumn: "due_at", onFailure: "")
    /// Every scheduled kind but the outbox, whose rows keep their own attempts and status.
    public static let scheduled: [JobKind] = [.checkinDeadline, .bridgeWatch, .alertEscalation, .liveLocation, .checkinRequestExpiry,
                                              .passwordReset, .retention, .mediaExpiry, .capExpiry]
    /// The outbox's deliveries (`OutboxStore`), named alike in metrics and `roost jobs`.
    public static let outbox = JobKind(name: "outbox", table: "outbox_jobs", idColumn: "outbox_id", dueColumn: "next_attempt_at",
                                       onFailure: "")

    /// Every kind, as metrics and `roost jobs` name them.
    public static let all: [JobKind] = scheduled + [outbox]

    public static func named(_ name: String) -> JobKind? {
        all.first { $0.name == name }
    }
}

/// A job claimed by a scheduler round: its row's id and its tenant.
public struct ClaimedJobRow: Sendable, Equatable {
    public let id: UUID
    public let tenant: UUID
}

/// A job that failed too often and waits for an operator (`roost jobs list --failed`).
public struct ParkedJob: Sendable, Equatable {
    public let kind: String
    public let id: UUID
    public let tenantID: UUID
    public let attempts: Int
    public let lastError: String?
    public let parkedAt: Date
}

/// Failures of scheduled jobs: counted, retried with backoff, parked after `maxAttempts`.
/// The job tables hold ids and times only (no row security), so this works across tenants.
public struct JobStore: Sendable {
    public init() {}

    /// Due jobs of `kind` (due by the database's clock) across tenants, or of one, soonest
    /// first, locked for the claiming transaction; other nodes skip them (SKIP LOCKED).
    public func claimDue(_ kind: JobKind, limit: Int, tenant: UUID? = nil, on connection: PostgresConnection) throws -> [ClaimedJobRow] {
        try connection.query("""
            SELECT \(unsafeRaw: kind.idColumn) AS id, tenant_id FROM \(unsafeRaw: kind.table)
            WHERE \(unsafeRaw: kind.dueColumn) <= now() AND parked_at IS NULL AND (\(tenant)::uuid IS NULL OR tenant_id = \(tenant))
            ORDER BY \(unsafeRaw: kind.dueColumn) LIMIT \(limit) FOR UPDATE SKIP LOCKED
            """).rows.map { ClaimedJobRow(id: try $0.decode(UUID.self, "id"), tenant: try $0.decode(UUID.self, "tenant_id")) }
    }

    /// Records a failed attempt of a claimed job (still locked by the caller's transaction):
    /// it is tried again after `backoff(attempts)` seconds, or parked once it has failed
    /// `maxAttempts` times. Returns the attempts so far, the wait, and whether it is now parked.
    public func recordFailure(_ kind: JobKind, id: UUID, error: String, maxAttempts: Int, backoff: (Int) -> Double,
                              on connection: PostgresConnection) throws -> (attempts: Int, retryIn: Double, parked: Bool) {
        guard let before = try connection.query("""
            SELECT attempts FROM \(unsafeRaw: kind.table) WHERE \(unsafeRaw: kind.idColumn) = \(id)
            """).first?.decode(Int.self, "attempts") else { return (0, 0, false) }
        let attempts = before + 1
        let parked = attempts >= maxAttempts
        let wait = backoff(attempts)
        try connection.query("""
            UPDATE \(unsafeRaw: kind.table) SET attempts = \(attempts), last_error = \(String(error.prefix(500))),
                \(unsafeRaw: kind.dueColumn) = now() + \(wait) * interval '1 second',
                parked_at = CASE WHEN \(parked) THEN now() END \(unsafeRaw: kind.onFailure)
            WHERE \(unsafeRaw: kind.idColumn) = \(id)
            """)
        return (attempts, wait, parked)
    }

    /// Parked jobs of every scheduled kind, oldest first.
    public func parked(limit: Int, on connection: PostgresConnection) throws -> [ParkedJob] {
        let union = JobKind.scheduled.map { kind in
            "SELECT '\(kind.name)' AS kind, \(kind.idColumn) AS id, tenant_id, attempts, last_error, parked_at FROM \(kind.table) "
                + "WHERE parked_at IS NOT NULL"
        }.joined(separator: " UNION ALL ")
        return try connection.query("SELECT * FROM (\(unsafeRaw: union)) parked ORDER BY parked_at, id LIMIT \(limit)").rows.map {
            ParkedJob(kind: try $0.decode(String.self, "kind"), id: try $0.decode(UUID.self, "id"), tenantID: try $0.decode(UUID.self, "tenant_id"),
                      attempts: try $0.decode(Int.self, "attempts"), lastError: try $0.decode(String?.self, "last_error"),
                      parkedAt: try $0.decode(Date.self, "parked_at"))
        }
    }

    /// Un-parks a job with a fresh set of attempts, due now; false when no such parked job exists.
    public func retry(_ kind: JobKind, id: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            UPDATE \(unsafeRaw: kind.table) SET attempts = 0, parked_at = NULL, \(unsafeRaw: kind.dueColumn) = now() \(unsafeRaw: kind.onFailure)
            WHERE \(unsafeRaw: kind.idColumn) = \(id) AND parked_at IS NOT NULL
            """).affectedRows == 1
    }
}
