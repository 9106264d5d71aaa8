import Foundation

/// A member's check-in (API.md "Check-ins (dead-man's switch)").
public struct Checkin: Sendable, Equatable {
    public let id: UUID
    public let groupID: UUID
    public let userID: UUID
    public let status: String
    public let note: String
    /// `{"lat","lon","accuracy_m"}` as JSON text, or nil.
    public let location: String?
    public let dueAt: Date
    public let createdAt: Date
    public let alertSeq: Int64?
}

/// Check-ins and their deadlines, in a tenant transaction; `claimDue` is the scheduler's
/// cross-tenant entry point.
public struct CheckinStore: Sendable {
    public init() {}

    /// The text of a missed check-in's alert when the member left no note.
    public static func missedText(name: String) -> String { "\(name) did not check in on time" }

    static let columns = "id, group_id, user_id, status, note, location::text AS location, due_at, created_at, alert_seq"

    public func activeCount(user: UUID, on connection: PostgresConnection) throws -> Int {
        try connection.query("SELECT count(*) AS n FROM checkins WHERE user_id = \(user) AND status = 'active'").rows[0].decode(Int.self, "n")
    }

    public func create(tenant: UUID, group: UUID, user: UUID, note: String, location: String?, dueInSeconds: Double,
                       on connection: PostgresConnection) throws -> Checkin {
        let checkin = try decode(connection.query("""
            INSERT INTO checkins (tenant_id, group_id, user_id, note, location, due_at)
            VALUES (\(tenant), \(group), \(user), \(note), \(location.map(RawJSON.init)), now() + \(dueInSeconds) * interval '1 second')
            RETURNING \(unsafeRaw: Self.columns)
            """).rows[0])
        try connection.query("INSERT INTO checkin_deadlines (checkin_id, tenant_id, due_at) VALUES (\(checkin.id), \(tenant), \(checkin.dueAt))")
        return checkin
    }

    /// The user's own check-in, locked for a change; nil for anyone else's.
    public func mine(_ id: UUID, user: UUID, on connection: PostgresConnection) throws -> Checkin? {
        try connection.query("""
            SELECT \(unsafeRaw: Self.columns) FROM checkins WHERE id = \(id) AND user_id = \(user) FOR UPDATE
            """).first.map(decode)
    }

    /// The user's check-ins, newest first: at most `limit` of them after `after`.
    public func list(user: UUID, status: String?, after: NewestFirst?, limit: Int, on connection: PostgresConnection) throws -> [Checkin] {
        try connection.query("""
            SELECT \(unsafeRaw: Self.columns) FROM checkins WHERE user_id = \(user) AND (\(status)::text IS NULL OR status = \(status))
              AND (\(after?.micros)::int8 IS NULL
                   OR (created_at, id) < ('epoch'::timestamptz + \(after?.micros)::int8 * interval '1 microsecond', \(after?.id)::uuid))
            ORDER BY created_at DESC, id DESC LIMIT \(limit)
            """).rows.map(decode)
    }

    public func setLocation(_ id: UUID, location: String, on connection: PostgresConnection) throws {
        try connection.query("UPDATE checkins SET location = \(RawJSON(location)) WHERE id = \(id)")
    }

    public func extend(_ id: UUID, dueInSeconds: Double, on connection: PostgresConnection) throws -> Checkin {
        let checkin = try decode(connection.query("""
            UPDATE checkins SET due_at = now() + \(dueInSeconds) * interval '1 second' WHERE id = \(id)
            RETURNING \(unsafeRaw: Self.columns)
            """).rows[0])
        // A new deadline is a fresh job: a parked one gets its attempts back.
        try connection.query("UPDATE checkin_deadlines SET due_at = \(checkin.dueAt), attempts = 0, last_error = NULL, parked_at = NULL WHERE checkin_id = \(id)")
        return checkin
    }

    /// Ends an active check-in (`completed` or `missed`) and drops its deadline.
    public func end(_ id: UUID, status: String, alertSeq: Int64? = nil, on connection: PostgresConnection) throws -> Checkin {
        let checkin = try decode(connection.query("""
            UPDATE checkins SET status = \(status), ended_at = now(), alert_seq = \(alertSeq) WHERE id = \(id)
            RETURNING \(unsafeRaw: Self.columns)
            """).rows[0])
        try connection.query("DELETE FROM checkin_deadlines WHERE checkin_id = \(id)")
        return checkin
    }

    /// Due deadlines, locked for this transaction and skipped by every other (several nodes run
    /// a scheduler); ids and tenants only, since the claim runs before any tenant is set.
    public func claimDue(limit: Int, on connection: PostgresConnection) throws -> [(checkin: UUID, tenant: UUID)] {
        try connection.query("""
            SELECT checkin_id, tenant_id FROM checkin_deadlines WHERE due_at <= now() AND parked_at IS NULL
            ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
            """).rows.map { (try $0.decode(UUID.self, "checkin_id"), try $0.decode(UUID.self, "tenant_id")) }
    }

    /// What a claimed deadline's check-in is now.
    public enum ClaimedState: Sendable {
        /// Active and due: locked for this transaction.
        case due(Checkin)
        /// Being changed by its owner right now (locked elsewhere): try again next round.
        case busy
        /// Not due any more (extended), or ended, or deleted.
        case notDue(exists: Bool, active: Bool)
    }

    /// A claimed check-in (under the transaction's tenant). Its row is locked with SKIP LOCKED:
    /// the owner's own changes lock the check-in before its deadline, the scheduler the other way
    /// round, so waiting here could deadlock.
    public func claimed(_ id: UUID, on connection: PostgresConnection) throws -> ClaimedState {
        if let row = try connection.query("""
            SELECT \(unsafeRaw: Self.columns), due_at <= now() AS due FROM checkins WHERE id = \(id) FOR UPDATE SKIP LOCKED
            """).first {
            let checkin = try decode(row)
            let due = try row.decode(Bool.self, "due")
            if checkin.status == "active" && due { return .due(checkin) }
            return .notDue(exists: true, active: checkin.status == "active")
        }
        let exists = try connection.query("SELECT 1 FROM checkins WHERE id = \(id)").first != nil
        return exists ? .busy : .notDue(exists: false, active: false)
    }

    /// A deadline whose check-in is gone or no longer due: forget it.
    public func dropDeadline(_ id: UUID, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM checkin_deadlines WHERE checkin_id = \(id)")
    }

    private func decode(_ row: PostgresRow) throws -> Checkin {
        Checkin(
            id: try row.decode(UUID.self, "id"), groupID: try row.decode(UUID.self, "group_id"), userID: try row.decode(UUID.self, "user_id"),
            status: try row.decode(String.self, "status"), note: try row.decode(String.self, "note"),
            location: try row.decode(String?.self, "location"), dueAt: try row.decode(Date.self, "due_at"),
            createdAt: try row.decode(Date.self, "created_at"), alertSeq: try row.decode(Int64?.self, "alert_seq"))
    }
}
