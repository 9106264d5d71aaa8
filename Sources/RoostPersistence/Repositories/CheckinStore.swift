import Foundation

/// A member's check-in (API.md "Check-ins").
public struct Checkin: Sendable, Equatable {
    public let id: UUID
    /// The first watching group (the one a check-in of the first version named).
    public let groupID: UUID
    /// Every watching group, the first first.
    public let groupIDs: [UUID]
    public let userID: UUID
    public let status: String
    public let note: String
    /// `{"lat","lon","accuracy_m"}` as JSON text, or nil; with its time and the battery then.
    public let location: String?
    public let locationAt: Date?
    public let battery: Int?
    public let dueAt: Date
    public let graceSeconds: Int
    public let promptedAt: Date?
    public let alertedAt: Date?
    /// `{"lat","lon","radius_m"}` as JSON text, or nil.
    public let destination: String?
    public let stallAfterSeconds: Int?
    /// Where (JSON text) and since when the walker has stood still.
    public let stillLocation: String?
    public let stillSince: Date
    public let createdAt: Date
    public let endedAt: Date?
    public let endReason: String?
    /// The alert raised in the first group.
    public let alertSeq: Int64?
    public let trailPoints: Int
    public let trailAt: Date?
    /// The emergency contacts it names (`contact_ids`).
    public let contactIDs: [UUID]
}

/// A new check-in, already validated.
public struct NewCheckin: Sendable {
    public var groups: [UUID]
    public var note: String
    public var location: String?
    public var battery: Int?
    public var dueInSeconds: Double
    public var graceSeconds: Int
    public var destination: String?
    public var stallAfterSeconds: Int?
    /// The walker's emergency contacts who watch it (told of an alert only once confirmed).
    public var contacts: [UUID] = []

    public init(groups: [UUID], note: String, location: String?, battery: Int?, dueInSeconds: Double, graceSeconds: Int,
                destination: String?, stallAfterSeconds: Int?) {
        self.groups = groups
        self.note = note
        self.location = location
        self.battery = battery
        self.dueInSeconds = dueInSeconds
        self.graceSeconds = graceSeconds
        self.destination = destination
        self.stallAfterSeconds = stallAfterSeconds
    }
}

/// A contact's view of a check-in they were told about.
public struct CheckinStatusPage: Sendable, Equatable {
    public let name: String
    public let status: String
    public let location: String?
    public let locationAt: Date?
    public let battery: Int?
    public let alertStatus: String?
}

/// A check-in's job a scheduler round claimed: which check-in, and whose.
public struct ClaimedCheckin: Sendable, Equatable {
    public let id: UUID
    public let tenant: UUID
}

/// Check-ins, their watching groups, trails and jobs, in a tenant transaction; `claimDue` is
/// the scheduler's cross-tenant entry point (sql/0004, sql/0014).
public struct CheckinStore: Sendable {
    public init() {}

    /// The text of a missed check-in's alert when the member left no note.
    public static func missedText(name: String) -> String { "\(name) did not check in on time" }

    static let columns = """
        c.id, c.group_id, c.user_id, c.status, c.note, c.location::text AS location, c.location_at, c.battery, c.due_at, c.grace_s,
        c.prompted_at, c.alerted_at, c.destination::text AS destination, c.stall_after_s, c.still_location::text AS still_location,
        c.still_since, c.created_at, c.ended_at, c.end_reason, c.alert_seq, c.trail_points, c.trail_at,
        ARRAY(SELECT w.group_id FROM checkin_groups w WHERE w.tenant_id = c.tenant_id AND w.checkin_id = c.id ORDER BY w.position) AS group_ids,
        ARRAY(SELECT k.contact_id FROM checkin_contacts k WHERE k.tenant_id = c.tenant_id AND k.checkin_id = c.id ORDER BY k.contact_id) AS contact_ids
        """

    /// The user's walks on (active or prompting): they may have a few at once.
    public func walkingCount(user: UUID, on connection: PostgresConnection) throws -> Int {
        try connection.query("""
            SELECT count(*) AS n FROM checkins WHERE user_id = \(user) AND status IN ('active', 'prompting')
            """).rows[0].decode(Int.self, "n")
    }

    /// A new check-in watched by its groups (in order), with its starting place as the trail's
    /// first point; its job is the caller's to `schedule`.
    public func create(tenant: UUID, user: UUID, _ new: NewCheckin, on connection: PostgresConnection) throws -> Checkin {
        let id = try connection.query("""
            INSERT INTO checkins (tenant_id, group_id, user_id, note, location, location_at, battery, due_at, grace_s, destination,
                                  stall_after_s, still_location)
            VALUES (\(tenant), \(new.groups[0]), \(user), \(new.note), \(new.location.map(RawJSON.init)),
                    CASE WHEN \(new.location)::text IS NOT NULL THEN now() END, \(new.battery),
                    now() + \(new.dueInSeconds) * interval '1 second', \(new.graceSeconds), \(new.destination.map(RawJSON.init)),
                    \(new.stallAfterSeconds), \(new.location.map(RawJSON.init)))
            RETURNING id
            """).rows[0].decode(UUID.self, "id")
        try connection.query("""
            INSERT INTO checkin_groups (tenant_id, checkin_id, group_id, position)
            SELECT \(tenant), \(id), g, p - 1 FROM unnest(\(new.groups)::uuid[]) WITH ORDINALITY AS t (g, p)
            """)
        if !new.contacts.isEmpty {
            try connection.query("""
                INSERT INTO checkin_contacts (tenant_id, checkin_id, contact_id) SELECT \(tenant), \(id), unnest(\(new.contacts)::uuid[])
                """)
        }
        if let location = new.location {
            try connection.query("""
                WITH point AS (INSERT INTO checkin_locations (tenant_id, checkin_id, at, location, battery)
                               VALUES (\(tenant), \(id), now(), \(RawJSON(location)), \(new.battery)))
                UPDATE checkins SET trail_points = 1, trail_at = now() WHERE id = \(id)
                """)
        }
        return try find(id, on: connection)!
    }

    /// The check-in's job, due at `at` (one row per check-in for its whole life).
    public func schedule(_ id: UUID, tenant: UUID, at: Date, on connection: PostgresConnection) throws {
        try connection.query("INSERT INTO checkin_deadlines (checkin_id, tenant_id, due_at) VALUES (\(id), \(tenant), \(at))")
    }

    public func find(_ id: UUID, on connection: PostgresConnection) throws -> Checkin? {
        try connection.query("SELECT \(unsafeRaw: Self.columns) FROM checkins c WHERE c.id = \(id)").first.map(decode)
    }

    /// The user's own check-in, locked for a change; nil for anyone else's.
    public func mine(_ id: UUID, user: UUID, on connection: PostgresConnection) throws -> Checkin? {
        try connection.query("""
            SELECT \(unsafeRaw: Self.columns) FROM checkins c WHERE c.id = \(id) AND c.user_id = \(user) FOR UPDATE OF c
            """).first.map(decode)
    }

    /// The user's check-ins, newest first: at most `limit` of them after `after`.
    public func list(user: UUID, status: String?, after: NewestFirst?, limit: Int, on connection: PostgresConnection) throws -> [Checkin] {
        try connection.query("""
            SELECT \(unsafeRaw: Self.columns) FROM checkins c WHERE c.user_id = \(user) AND (\(status)::text IS NULL OR c.status = \(status))
              AND (\(after?.micros)::int8 IS NULL
                   OR (c.created_at, c.id) < ('epoch'::timestamptz + \(after?.micros)::int8 * interval '1 microsecond', \(after?.id)::uuid))
            ORDER BY c.created_at DESC, c.id DESC LIMIT \(limit)
            """).rows.map(decode)
    }

    /// The walker's newest place, battery and stillness; the point joins the trail when `trail`.
    public func recordLocation(_ checkin: Checkin, tenant: UUID, location: String, battery: Int?, stillLocation: String, stillSince: Date,
                               trail: Bool, on connection: PostgresConnection) throws {
        try connection.query("""
            UPDATE checkins SET location = \(RawJSON(location)), location_at = now(), battery = \(battery),
                still_location = \(RawJSON(stillLocation)), still_since = \(stillSince),
                trail_points = trail_points + CASE WHEN \(trail) THEN 1 ELSE 0 END,
                trail_at = CASE WHEN \(trail) THEN now() ELSE trail_at END
            WHERE id = \(checkin.id)
            """)
        if trail {
            try connection.query("""
                INSERT INTO checkin_locations (tenant_id, checkin_id, at, location, battery)
                VALUES (\(tenant), \(checkin.id), now(), \(RawJSON(location)), \(battery)) ON CONFLICT DO NOTHING
                """)
        }
    }

    /// A new deadline counted from now; a prompt is answered (back to active) and the walker
    /// counts as having moved. The job is the caller's to `reschedule`.
    public func extend(_ id: UUID, dueInSeconds: Double, on connection: PostgresConnection) throws -> Checkin {
        try connection.query("""
            UPDATE checkins SET due_at = now() + \(dueInSeconds) * interval '1 second', status = 'active', prompted_at = NULL,
                still_since = now()
            WHERE id = \(id)
            """)
        return try find(id, on: connection)!
    }

    /// The walker did not answer by the deadline: asked "are you OK?" at `at`; the job looks
    /// again at `missAt`.
    public func prompt(_ id: UUID, at: Date, missAt: Date, on connection: PostgresConnection) throws {
        try connection.query("UPDATE checkins SET status = 'prompting', prompted_at = \(at) WHERE id = \(id)")
        try reschedule(id, at: missAt, on: connection)
    }

    /// An alert went out (`missed` or `escalated`) at `at`; the check-in lapses a day later.
    public func alerted(_ id: UUID, status: String, at: Date, lapseAt: Date, on connection: PostgresConnection) throws {
        try connection.query("UPDATE checkins SET status = \(status), alerted_at = \(at) WHERE id = \(id)")
        try reschedule(id, at: lapseAt, on: connection)
    }

    /// The alert raised in one watching group.
    public func setAlert(_ id: UUID, group: UUID, seq: Int64, on connection: PostgresConnection) throws {
        try connection.query("UPDATE checkin_groups SET alert_seq = \(seq) WHERE checkin_id = \(id) AND group_id = \(group)")
        try connection.query("UPDATE checkins SET alert_seq = \(seq) WHERE id = \(id) AND group_id = \(group)")
    }

    /// The silent alert a duress answer raised in a group (kept apart from `alert_seq`, which
    /// the walker sees), and when the duress answer came (once: a later one keeps the first).
    public func setDuressAlert(_ id: UUID, group: UUID, seq: Int64, on connection: PostgresConnection) throws {
        try connection.query("UPDATE checkin_groups SET duress_seq = \(seq) WHERE checkin_id = \(id) AND group_id = \(group)")
        try connection.query("UPDATE checkins SET duress_at = coalesce(duress_at, now()) WHERE id = \(id)")
    }

    /// Ends a check-in now: `status` stays as it is when nil (a lapse); its locations go
    /// `purgeAfter` seconds later.
    public func end(_ id: UUID, status: String?, reason: String, purgeAfter: Double, on connection: PostgresConnection) throws -> Checkin {
        try connection.query("""
            UPDATE checkins SET status = coalesce(\(status), status), ended_at = now(), end_reason = \(reason) WHERE id = \(id)
            """)
        let ended = try find(id, on: connection)!
        try reschedule(id, at: ended.endedAt!.addingTimeInterval(purgeAfter), on: connection)
        return ended
    }

    /// A day after the end: the trail, the newest place and the battery are deleted, and the
    /// job with them.
    public func purgeLocations(_ id: UUID, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM checkin_locations WHERE checkin_id = \(id)")
        try stripAlertTrails(checkin: id, on: connection)
        try connection.query("UPDATE checkins SET location = NULL, location_at = NULL, battery = NULL, still_location = NULL WHERE id = \(id)")
        try dropDeadline(id, on: connection)
    }

    /// The confirmed emergency contacts watching the check-in, with whether each was told of its alert.
    public func contacts(of checkin: Checkin, on connection: PostgresConnection) throws -> [(contact: OutsideContact, told: Bool)] {
        let told = Dictionary(try connection.query("""
            SELECT contact_id, told_at IS NOT NULL AS told FROM checkin_contacts WHERE checkin_id = \(checkin.id)
            """).rows.map { (try $0.decode(UUID.self, "contact_id"), try $0.decode(Bool.self, "told")) }, uniquingKeysWith: { $1 })
        guard !told.isEmpty else { return [] }
        return try OutsideContactStore.emergency.confirmed(owner: checkin.userID, among: Array(told.keys), on: connection)
            .map { ($0, told[$0.id] ?? false) }
    }

    /// A contact was told of the check-in's alert, with a status page link whose token is hashed here.
    public func markTold(_ id: UUID, contact: UUID, statusTokenHash: [UInt8], on connection: PostgresConnection) throws {
        try connection.query("""
            UPDATE checkin_contacts SET told_at = now(), status_token_hash = \(Data(statusTokenHash))
            WHERE checkin_id = \(id) AND contact_id = \(contact)
            """)
    }

    /// What a contact's status page shows, found by its link's token: nil for an unknown token,
    /// and from a day after the check-in ended.
    public func statusPage(tokenHash: [UInt8], on connection: PostgresConnection) throws -> CheckinStatusPage? {
        try connection.query("""
            SELECT u.display_name, CASE WHEN c.duress_at IS NOT NULL THEN 'duress' ELSE c.status END AS status,
                   c.location::text AS location, c.location_at, c.battery,
                   (SELECT a.status FROM checkin_groups w
                    JOIN alerts a ON a.tenant_id = w.tenant_id AND a.group_id = w.group_id AND a.seq = coalesce(w.duress_seq, w.alert_seq)
                    WHERE w.checkin_id = c.id ORDER BY w.position LIMIT 1) AS alert_status
            FROM checkin_contacts k
            JOIN checkins c ON c.tenant_id = k.tenant_id AND c.id = k.checkin_id
            JOIN users u ON u.tenant_id = c.tenant_id AND u.id = c.user_id
            WHERE k.status_token_hash = \(Data(tokenHash)) AND (c.ended_at IS NULL OR c.ended_at > now() - \(CheckinStore.statusPageSeconds) * interval '1 second')
            """).first.map {
            CheckinStatusPage(name: try $0.decode(String.self, "display_name"), status: try $0.decode(String.self, "status"),
                              location: try $0.decode(String?.self, "location"), locationAt: try $0.decode(Date?.self, "location_at"),
                              battery: try $0.decode(Int?.self, "battery"), alertStatus: try $0.decode(String?.self, "alert_status"))
        }
    }

    /// How long a status page works after its check-in ends.
    public static let statusPageSeconds = 86_400

    /// Deletes the copies of the trail from the alerts that `checkin`, or every check-in of
    /// `user`, raised (their own place stays, as any alert's): the alert and its event.
    public func stripAlertTrails(checkin: UUID? = nil, user: UUID? = nil, on connection: PostgresConnection) throws {
        try connection.query("""
            WITH raised AS (
                SELECT w.group_id, s.seq AS alert_seq
                FROM checkin_groups w JOIN checkins c ON c.tenant_id = w.tenant_id AND c.id = w.checkin_id
                CROSS JOIN LATERAL (VALUES (w.alert_seq), (w.duress_seq)) AS s (seq)
                WHERE s.seq IS NOT NULL AND (\(checkin)::uuid IS NULL OR c.id = \(checkin)) AND (\(user)::uuid IS NULL OR c.user_id = \(user))),
            alerts AS (
                UPDATE alerts a SET details = a.details - 'trail' FROM raised r
                WHERE a.group_id = r.group_id AND a.seq = r.alert_seq AND a.details ? 'trail')
            UPDATE group_events e SET data = e.data #- '{alert,details,trail}' FROM raised r
            WHERE e.group_id = r.group_id AND e.seq = r.alert_seq AND e.event = 'message.created'
            """)
    }

    /// The watching groups, first first, with the alert raised in each.
    public func watchers(of id: UUID, on connection: PostgresConnection) throws -> [(group: UUID, alertSeq: Int64?)] {
        try connection.query("""
            SELECT group_id, alert_seq FROM checkin_groups WHERE checkin_id = \(id) ORDER BY position
            """).rows.map { (try $0.decode(UUID.self, "group_id"), try $0.decode(Int64?.self, "alert_seq")) }
    }

    /// The trail as a JSON array of `{"lat","lon","at","battery"}`, at most `limit` points
    /// spread evenly over it (the first and the newest always among them), oldest first.
    public func trailJSON(of id: UUID, limit: Int, on connection: PostgresConnection) throws -> String {
        try connection.query("SELECT \(fragment: trail(of: "\(id)", limit: limit))::text AS trail").rows[0].decode(String.self, "trail")
    }

    /// `trailJSON`'s jsonb array as an SQL expression, for the check-in whose id `checkin` is (a
    /// value, or a column of the statement it goes into).
    private func trail(of checkin: SQLQuery, limit: Int) -> SQLQuery {
        """
        (SELECT coalesce(jsonb_agg(jsonb_build_object(
                    'lat', location->'lat', 'lon', location->'lon', 'battery', battery,
                    'at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY at), '[]')
         FROM (SELECT at, location, battery, row_number() OVER (ORDER BY at) - 1 AS n, count(*) OVER () AS total
               FROM checkin_locations WHERE checkin_id = \(fragment: checkin)) points
         WHERE total <= \(limit) OR n = total - 1 OR n % ceil(total::float8 / \(limit - 1))::int8 = 0)
        """
    }

    /// The walks `group` watches that have not ended, by members still in it, soonest due first
    /// (at most `limit`), as a JSON array of `{"id","user":{"id","display_name"},"status","note",
    /// "due_at","created_at","prompted_at","alerted_at","location","location_at","battery",
    /// "alert_seq","trail"}` (the trail as `trailJSON` has it, at most `trailPoints`): what the
    /// group's watchers see ("walking now"), in one statement.
    public func watchedJSON(group: UUID, limit: Int, trailPoints: Int, on connection: PostgresConnection) throws -> [String] {
        try connection.query("""
            SELECT jsonb_build_object(
                'id', c.id, 'user', jsonb_build_object('id', u.id, 'display_name', u.display_name),
                'status', c.status, 'note', c.note,
                'due_at', to_char(c.due_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'created_at', to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'prompted_at', to_char(c.prompted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'alerted_at', to_char(c.alerted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'location', c.location,
                'location_at', to_char(c.location_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'battery', c.battery, 'alert_seq', w.alert_seq, 'trail', \(fragment: trail(of: "c.id", limit: trailPoints)))::text AS json
            FROM checkin_groups w
            JOIN checkins c ON c.tenant_id = w.tenant_id AND c.id = w.checkin_id
            JOIN users u ON u.tenant_id = c.tenant_id AND u.id = c.user_id
            JOIN memberships m ON m.tenant_id = w.tenant_id AND m.group_id = w.group_id AND m.user_id = c.user_id
            WHERE w.group_id = \(group) AND c.ended_at IS NULL
            ORDER BY c.due_at, c.id LIMIT \(limit)
            """).rows.map { try $0.decode(String.self, "json") }
    }

    /// Due jobs at `now`, locked for this transaction and skipped by every other (several nodes
    /// run a scheduler); ids and tenants only, since the claim runs before any tenant is set.
    /// With `tenant`, that tenant's only (a test driving rounds at chosen times).
    public func claimDue(at now: Date, limit: Int, tenant: UUID? = nil, on connection: PostgresConnection) throws -> [ClaimedCheckin] {
        try connection.query("""
            SELECT checkin_id, tenant_id FROM checkin_deadlines
            WHERE due_at <= \(now) AND parked_at IS NULL AND (\(tenant)::uuid IS NULL OR tenant_id = \(tenant))
            ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
            """).rows.map { ClaimedCheckin(id: try $0.decode(UUID.self, "checkin_id"), tenant: try $0.decode(UUID.self, "tenant_id")) }
    }

    /// What a claimed job's check-in is now.
    public enum ClaimedState: Sendable {
        /// Locked for this transaction.
        case found(Checkin)
        /// Being changed by its owner right now (locked elsewhere): try again next round.
        case busy
        /// Deleted (the account or the group went).
        case gone
    }

    /// A claimed check-in (under the transaction's tenant), locked with SKIP LOCKED: the
    /// owner's own changes lock the check-in before its job, the scheduler the other way round,
    /// so waiting here could deadlock.
    public func claimed(_ id: UUID, on connection: PostgresConnection) throws -> ClaimedState {
        if let row = try connection.query("SELECT \(unsafeRaw: Self.columns) FROM checkins c WHERE c.id = \(id) FOR UPDATE OF c SKIP LOCKED").first {
            return .found(try decode(row))
        }
        return try connection.query("SELECT 1 FROM checkins WHERE id = \(id)").first != nil ? .busy : .gone
    }

    /// The job looks again at `at`, as a fresh job (a parked one gets its attempts back).
    public func reschedule(_ id: UUID, at: Date, on connection: PostgresConnection) throws {
        try connection.query("""
            UPDATE checkin_deadlines SET due_at = \(at), attempts = 0, last_error = NULL, parked_at = NULL WHERE checkin_id = \(id)
            """)
    }

    public func dropDeadline(_ id: UUID, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM checkin_deadlines WHERE checkin_id = \(id)")
    }

    private func decode(_ row: PostgresRow) throws -> Checkin {
        Checkin(
            id: try row.decode(UUID.self, "id"), groupID: try row.decode(UUID.self, "group_id"), groupIDs: try row.decode([UUID].self, "group_ids"),
            userID: try row.decode(UUID.self, "user_id"), status: try row.decode(String.self, "status"), note: try row.decode(String.self, "note"),
            location: try row.decode(String?.self, "location"), locationAt: try row.decode(Date?.self, "location_at"),
            battery: try row.decode(Int?.self, "battery"), dueAt: try row.decode(Date.self, "due_at"), graceSeconds: try row.decode(Int.self, "grace_s"),
            promptedAt: try row.decode(Date?.self, "prompted_at"), alertedAt: try row.decode(Date?.self, "alerted_at"),
            destination: try row.decode(String?.self, "destination"), stallAfterSeconds: try row.decode(Int?.self, "stall_after_s"),
            stillLocation: try row.decode(String?.self, "still_location"), stillSince: try row.decode(Date.self, "still_since"),
            createdAt: try row.decode(Date.self, "created_at"), endedAt: try row.decode(Date?.self, "ended_at"),
            endReason: try row.decode(String?.self, "end_reason"), alertSeq: try row.decode(Int64?.self, "alert_seq"),
            trailPoints: try row.decode(Int.self, "trail_points"), trailAt: try row.decode(Date?.self, "trail_at"),
            contactIDs: try row.decode([UUID].self, "contact_ids"))
    }
}
