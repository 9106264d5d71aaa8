import Foundation
import RoostProtocol

/// One sharer's newest point on an alert.
public struct LivePoint: Sendable, Equatable {
    public let userID: UUID
    public let displayName: String
    public let lat: Double
    public let lon: Double
    public let accuracyM: Double?
    public let battery: Int?
    public let at: Date

    public init(userID: UUID, displayName: String, lat: Double, lon: Double, accuracyM: Double?, battery: Int?, at: Date) {
        self.userID = userID
        self.displayName = displayName
        self.lat = lat
        self.lon = lon
        self.accuracyM = accuracyM
        self.battery = battery
        self.at = at
    }
}

/// A claimed live-location job: a coalesced point's notice (`flush`), or else the end of a
/// sharing idle too long.
public struct ClaimedLiveLocation: Sendable, Equatable {
    public let id: UUID
    public let tenant: UUID
    public let group: UUID
    public let seq: Int64
    public let user: UUID
    public let flush: Bool
    public let dueAt: Date
}

/// Live locations while help is on the way (sql/0011): only the newest point of each sharer of
/// an alert is stored, and it is deleted when sharing ends. The job rows (ids and times only)
/// are claimed across tenants; points are read in the job's tenant.
public struct LiveLocationStore: Sendable {
    public init() {}

    /// Who may share on an alert, read with the alert row held against a concurrent close
    /// (`FOR SHARE`; a close takes it `FOR UPDATE` and then ends every sharing).
    public func sharingState(group: UUID, seq: Int64, user: UUID, on connection: PostgresConnection)
        throws -> (open: Bool, author: Bool, coming: Bool)?
    {
        try connection.query("""
            SELECT a.status = 'open' AS open, (m.author_type = 'user' AND m.author_id = \(user)) AS author,
                   EXISTS (SELECT 1 FROM alert_acks k WHERE k.tenant_id = a.tenant_id AND k.group_id = a.group_id AND k.seq = a.seq
                           AND k.user_id = \(user) AND k.response = 'on_my_way') AS coming
            FROM alerts a JOIN messages m ON m.tenant_id = a.tenant_id AND m.group_id = a.group_id AND m.seq = a.seq
            WHERE a.group_id = \(group) AND a.seq = \(seq) FOR SHARE OF a
            """).first.map { (try $0.decode(Bool.self, "open"), try $0.decode(Bool.self, "author"), try $0.decode(Bool.self, "coming")) }
    }

    public func alertExists(group: UUID, seq: Int64, on connection: PostgresConnection) throws -> Bool {
        try connection.query("SELECT 1 FROM alerts WHERE group_id = \(group) AND seq = \(seq)").first != nil
    }

    /// Keeps `location` as the sharer's newest point (taken at `at`); when the last notice for
    /// this sharer went out (nil: none yet). The row stays locked for the rest of the change.
    public func store(tenant: UUID, group: UUID, seq: Int64, user: UUID, location: Location, battery: Int?, at: Date,
                      on connection: PostgresConnection) throws -> Date? {
        try connection.query("""
            INSERT INTO live_locations (tenant_id, group_id, seq, user_id, lat, lon, accuracy_m, battery, at)
            VALUES (\(tenant), \(group), \(seq), \(user), \(location.lat), \(location.lon), \(location.accuracyM), \(battery), \(at))
            ON CONFLICT (tenant_id, group_id, seq, user_id) DO UPDATE
                SET lat = excluded.lat, lon = excluded.lon, accuracy_m = excluded.accuracy_m, battery = excluded.battery, at = excluded.at
            RETURNING noticed_at
            """).rows[0].decode(Date?.self, "noticed_at")
    }

    public func markNoticed(group: UUID, seq: Int64, user: UUID, at: Date, on connection: PostgresConnection) throws {
        try connection.query("UPDATE live_locations SET noticed_at = \(at) WHERE group_id = \(group) AND seq = \(seq) AND user_id = \(user)")
    }

    /// What the sharing waits for next: the coalesced point's notice at `due` (`flush`), or the
    /// end of the sharing then.
    public func schedule(tenant: UUID, group: UUID, seq: Int64, user: UUID, due: Date, flush: Bool, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO live_location_jobs (tenant_id, group_id, seq, user_id, due_at, flush)
            VALUES (\(tenant), \(group), \(seq), \(user), \(due), \(flush))
            ON CONFLICT (tenant_id, group_id, seq, user_id) DO UPDATE
                SET due_at = excluded.due_at, flush = excluded.flush, attempts = 0, last_error = NULL, parked_at = NULL
            """)
    }

    /// Jobs due at `now`, locked for this transaction and skipped by every other.
    public func claimDue(at now: Date, limit: Int, tenant: UUID? = nil, on connection: PostgresConnection) throws -> [ClaimedLiveLocation] {
        try connection.query("""
            SELECT job_id, tenant_id, group_id, seq, user_id, flush, due_at FROM live_location_jobs
            WHERE due_at <= \(now) AND parked_at IS NULL AND (\(tenant)::uuid IS NULL OR tenant_id = \(tenant)) ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
            """).rows.map {
            ClaimedLiveLocation(id: try $0.decode(UUID.self, "job_id"), tenant: try $0.decode(UUID.self, "tenant_id"),
                                group: try $0.decode(UUID.self, "group_id"), seq: try $0.decode(Int64.self, "seq"),
                                user: try $0.decode(UUID.self, "user_id"), flush: try $0.decode(Bool.self, "flush"),
                                dueAt: try $0.decode(Date.self, "due_at"))
        }
    }

    /// A sharer's newest point, locked against a concurrent update (skipped while one runs:
    /// the job then waits for the next round); nil when sharing has ended.
    public func point(group: UUID, seq: Int64, user: UUID, on connection: PostgresConnection) throws -> PointClaim {
        if let row = try connection.query("""
            SELECT p.user_id, coalesce(u.display_name, '') AS display_name, p.lat, p.lon, p.accuracy_m, p.battery, p.at
            FROM live_locations p LEFT JOIN users u ON u.tenant_id = p.tenant_id AND u.id = p.user_id
            WHERE p.group_id = \(group) AND p.seq = \(seq) AND p.user_id = \(user) FOR UPDATE OF p SKIP LOCKED
            """).first {
            return .point(try decode(row))
        }
        let exists = try connection.query("""
            SELECT 1 FROM live_locations WHERE group_id = \(group) AND seq = \(seq) AND user_id = \(user)
            """).first != nil
        return exists ? .busy : .ended
    }

    public enum PointClaim: Sendable, Equatable {
        case point(LivePoint)
        case busy
        case ended
    }

    public func dropJob(_ id: UUID, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM live_location_jobs WHERE job_id = \(id)")
    }

    /// Ends one sharing: its point and its job are deleted; whether there was one.
    @discardableResult
    public func end(tenant: UUID, group: UUID, seq: Int64, user: UUID, on connection: PostgresConnection) throws -> Bool {
        let ended = try connection.query("DELETE FROM live_locations WHERE group_id = \(group) AND seq = \(seq) AND user_id = \(user)").affectedRows > 0
        try connection.query("DELETE FROM live_location_jobs WHERE tenant_id = \(tenant) AND group_id = \(group) AND seq = \(seq) AND user_id = \(user)")
        return ended
    }

    /// Ends every sharing of one user in a group (they left it); the alerts' seqs.
    public func endAll(of user: UUID, tenant: UUID, group: UUID, on connection: PostgresConnection) throws -> [Int64] {
        let seqs = try connection.query("""
            DELETE FROM live_locations WHERE group_id = \(group) AND user_id = \(user) RETURNING seq
            """).rows.map { try $0.decode(Int64.self, "seq") }
        if !seqs.isEmpty {
            try connection.query("DELETE FROM live_location_jobs WHERE tenant_id = \(tenant) AND group_id = \(group) AND user_id = \(user)")
        }
        return seqs.sorted()
    }

    /// Ends every sharing of an alert (it closed); the users who were sharing.
    public func endAll(tenant: UUID, group: UUID, seq: Int64, on connection: PostgresConnection) throws -> [UUID] {
        let users = try connection.query("""
            DELETE FROM live_locations WHERE group_id = \(group) AND seq = \(seq) RETURNING user_id
            """).rows.map { try $0.decode(UUID.self, "user_id") }
        if !users.isEmpty {
            try connection.query("DELETE FROM live_location_jobs WHERE tenant_id = \(tenant) AND group_id = \(group) AND seq = \(seq)")
        }
        return users.sorted { $0.uuidString < $1.uuidString }
    }

    /// The newest point of each sharer of an alert, the most recent first.
    public func points(group: UUID, seq: Int64, on connection: PostgresConnection) throws -> [LivePoint] {
        try connection.query("""
            SELECT p.user_id, coalesce(u.display_name, '') AS display_name, p.lat, p.lon, p.accuracy_m, p.battery, p.at
            FROM live_locations p LEFT JOIN users u ON u.tenant_id = p.tenant_id AND u.id = p.user_id
            WHERE p.group_id = \(group) AND p.seq = \(seq) ORDER BY p.at DESC, p.user_id
            """).rows.map(decode)
    }

    private func decode(_ row: PostgresRow) throws -> LivePoint {
        LivePoint(userID: try row.decode(UUID.self, "user_id"), displayName: try row.decode(String.self, "display_name"),
                  lat: try row.decode(Double.self, "lat"), lon: try row.decode(Double.self, "lon"),
                  accuracyM: try row.decode(Double?.self, "accuracy_m"), battery: try row.decode(Int?.self, "battery"),
                  at: try row.decode(Date.self, "at"))
    }
}
