import Foundation

/// A member's "are you OK?" to a co-member (sql/0017_checkin_requests.sql).
public struct CheckinRequest: Sendable, Equatable {
    public let id: UUID
    public let groupID: UUID
    public let requesterID: UUID
    public let requesterName: String
    public let addresseeID: UUID
    public let addresseeName: String
    public let note: String
    /// `pending`, `safe`, `need_help` or `expired`.
    public let status: String
    public let createdAt: Date
    public let expiresAt: Date
    public let answeredAt: Date?
    /// The alert a `need_help` answer raised.
    public let alertSeq: Int64?
    /// The addressee's newest place, shared with the requester when the request expired.
    public let sharedLocation: String?
    public let sharedLocationAt: Date?
}

/// A request expiry a scheduler round claimed across tenants.
public struct ClaimedCheckinRequest: Sendable, Equatable {
    public let id: UUID
    public let tenant: UUID
}

/// Check-in requests and their expiries, in a tenant transaction; `claimDue` is the
/// scheduler's cross-tenant entry point. Also the one preference they depend on.
public struct CheckinRequestStore: Sendable {
    public init() {}

    static let columns = """
        r.id, r.group_id, r.requester_id, coalesce(q.display_name, '') AS requester_name, r.addressee_id,
        coalesce(a.display_name, '') AS addressee_name, r.note, r.status, r.created_at, r.expires_at, r.answered_at, r.alert_seq,
        r.shared_location::text AS shared_location, r.shared_location_at
        """
    static let from = """
        checkin_requests r
        LEFT JOIN users q ON q.tenant_id = r.tenant_id AND q.id = r.requester_id
        LEFT JOIN users a ON a.tenant_id = r.tenant_id AND a.id = r.addressee_id
        """

    /// A new pending request, due to expire `seconds` from now (its expiry job queued with it);
    /// nil when the requester already has one pending to the addressee.
    public func create(tenant: UUID, group: UUID, requester: UUID, addressee: UUID, note: String, seconds: Int,
                       on connection: PostgresConnection) throws -> CheckinRequest? {
        guard let row = try connection.query("""
            INSERT INTO checkin_requests (tenant_id, group_id, requester_id, addressee_id, note, expires_at)
            VALUES (\(tenant), \(group), \(requester), \(addressee), \(note), now() + \(seconds) * interval '1 second')
            ON CONFLICT (tenant_id, requester_id, addressee_id) WHERE status = 'pending' DO NOTHING
            RETURNING id, expires_at
            """).first else { return nil }
        let id = try row.decode(UUID.self, "id")
        try connection.query("""
            INSERT INTO checkin_request_expiries (request_id, tenant_id, due_at) VALUES (\(id), \(tenant), \(try row.decode(Date.self, "expires_at")))
            """)
        return try find(id, on: connection)
    }

    public func find(_ id: UUID, forUpdate: Bool = false, on connection: PostgresConnection) throws -> CheckinRequest? {
        try connection.query("""
            SELECT \(unsafeRaw: Self.columns) FROM \(unsafeRaw: Self.from) WHERE r.id = \(id) \(unsafeRaw: forUpdate ? "FOR UPDATE OF r" : "")
            """).first.map(decode)
    }

    /// A user's requests, sent or received, newest first.
    public func list(user: UUID, sent: Bool, after: NewestFirst?, limit: Int, on connection: PostgresConnection) throws -> [CheckinRequest] {
        try connection.query("""
            SELECT \(unsafeRaw: Self.columns) FROM \(unsafeRaw: Self.from)
            WHERE \(unsafeRaw: sent ? "r.requester_id" : "r.addressee_id") = \(user)
              AND (\(after?.micros)::int8 IS NULL
                   OR (r.created_at, r.id) < ('epoch'::timestamptz + \(after?.micros)::int8 * interval '1 microsecond', \(after?.id)::uuid))
            ORDER BY r.created_at DESC, r.id DESC LIMIT \(limit)
            """).rows.map(decode)
    }

    /// The addressee's answer (`safe` or `need_help`, with the alert it raised); the expiry goes.
    public func answer(_ id: UUID, status: String, alertSeq: Int64?, on connection: PostgresConnection) throws -> CheckinRequest {
        try connection.query("""
            UPDATE checkin_requests SET status = \(status), answered_at = now(), alert_seq = \(alertSeq) WHERE id = \(id)
            """)
        try dropExpiry(id, on: connection)
        return try find(id, on: connection)!
    }

    /// No answer came: expired, with the place shared with the requester (if any); the expiry goes.
    public func expire(_ id: UUID, sharing place: (location: String, at: Date)?, on connection: PostgresConnection) throws -> CheckinRequest {
        try connection.query("""
            UPDATE checkin_requests SET status = 'expired', shared_location = \(place.map { RawJSON($0.location) }),
                shared_location_at = \(place?.at) WHERE id = \(id)
            """)
        try dropExpiry(id, on: connection)
        return try find(id, on: connection)!
    }

    /// Due expiries across tenants (or of one), locked for the claiming transaction.
    public func claimDue(at now: Date, limit: Int, tenant: UUID? = nil, on connection: PostgresConnection) throws -> [ClaimedCheckinRequest] {
        try connection.query("""
            SELECT request_id, tenant_id FROM checkin_request_expiries
            WHERE due_at <= \(now) AND parked_at IS NULL AND (\(tenant)::uuid IS NULL OR tenant_id = \(tenant))
            ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
            """).rows.map { ClaimedCheckinRequest(id: try $0.decode(UUID.self, "request_id"), tenant: try $0.decode(UUID.self, "tenant_id")) }
    }

    public func dropExpiry(_ id: UUID, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM checkin_request_expiries WHERE request_id = \(id)")
    }

    /// The user's newest place Roost knows, from their check-ins (kept a day after each ends).
    public func newestPlace(of user: UUID, on connection: PostgresConnection) throws -> (location: String, at: Date)? {
        try connection.query("""
            SELECT location::text AS location, location_at FROM checkins
            WHERE user_id = \(user) AND location IS NOT NULL AND location_at IS NOT NULL
            ORDER BY location_at DESC LIMIT 1
            """).first.map { (try $0.decode(String.self, "location"), try $0.decode(Date.self, "location_at")) }
    }

    private func decode(_ row: PostgresRow) throws -> CheckinRequest {
        CheckinRequest(
            id: try row.decode(UUID.self, "id"), groupID: try row.decode(UUID.self, "group_id"), requesterID: try row.decode(UUID.self, "requester_id"),
            requesterName: try row.decode(String.self, "requester_name"), addresseeID: try row.decode(UUID.self, "addressee_id"),
            addresseeName: try row.decode(String.self, "addressee_name"), note: try row.decode(String.self, "note"),
            status: try row.decode(String.self, "status"), createdAt: try row.decode(Date.self, "created_at"),
            expiresAt: try row.decode(Date.self, "expires_at"), answeredAt: try row.decode(Date?.self, "answered_at"),
            alertSeq: try row.decode(Int64?.self, "alert_seq"), sharedLocation: try row.decode(String?.self, "shared_location"),
            sharedLocationAt: try row.decode(Date?.self, "shared_location_at"))
    }
}
