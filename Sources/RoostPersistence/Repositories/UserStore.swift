import Foundation
import RoostProtocol

/// A neighbour's account (API.md "Accounts"). `passwordHash` never leaves the server.
public struct User: Sendable, Equatable {
    public let id: UUID
    public let tenantID: UUID
    public let email: String?
    public let phone: String?
    public let emailVerified: Bool
    public let phoneVerified: Bool
    public let displayName: String
    public let passwordHash: String?
    public let createdAt: Date
}

/// Users and their sessions. Every method runs inside a tenant transaction
/// (`withTenantTransaction`), so row-level security scopes it to that tenant.
public struct UserStore: Sendable {
    public init() {}

    static let columns = "id, tenant_id, email, phone, email_verified, phone_verified, display_name, password_hash, created_at"

    /// A new user; a taken email or phone surfaces as `uniqueViolation`.
    public func create(
        tenant: UUID, email: String?, phone: String?, passwordHash: String, displayName: String, on connection: PostgresConnection
    ) throws -> User {
        try decode(connection.query("""
            INSERT INTO users (tenant_id, email, phone, password_hash, display_name)
            VALUES (\(tenant), \(email), \(phone), \(passwordHash), \(displayName))
            RETURNING \(unsafeRaw: Self.columns)
            """).rows[0])
    }

    /// The live account with this email or phone, for login.
    public func find(email: String?, phone: String?, on connection: PostgresConnection) throws -> User? {
        try connection.query("""
            SELECT \(unsafeRaw: Self.columns) FROM users
            WHERE deleted_at IS NULL AND ((\(email)::text IS NOT NULL AND email = \(email))
                                       OR (\(phone)::text IS NOT NULL AND phone = \(phone)))
            LIMIT 1
            """).first.map(decode)
    }

    public func find(id: UUID, on connection: PostgresConnection) throws -> User? {
        try connection.query("""
            SELECT \(unsafeRaw: Self.columns) FROM users WHERE id = \(id) AND deleted_at IS NULL
            """).first.map(decode)
    }

    public func updatePasswordHash(_ hash: String, user: UUID, on connection: PostgresConnection) throws {
        try connection.query("UPDATE users SET password_hash = \(hash) WHERE id = \(user)")
    }

    /// Marks the user's email (`channel` "email") or phone ("phone") verified, if it is still `address`.
    @discardableResult
    public func markVerified(user: UUID, channel: String, address: String, on connection: PostgresConnection) throws -> Bool {
        switch channel {
        case "email":
            return try connection.query("UPDATE users SET email_verified = true WHERE id = \(user) AND email = \(address)").affectedRows == 1
        default:
            return try connection.query("UPDATE users SET phone_verified = true WHERE id = \(user) AND phone = \(address)").affectedRows == 1
        }
    }

    /// Switches the account to a new, proven address (a change confirmed), or back to its old
    /// one as it was (a change undone); a unique violation when another live account has it.
    public func switchAddress(user: UUID, channel: String, to address: String, verified: Bool = true, on connection: PostgresConnection) throws {
        if channel == "email" {
            try connection.query("UPDATE users SET email = \(address), email_verified = \(verified) WHERE id = \(user)")
        } else {
            try connection.query("UPDATE users SET phone = \(address), phone_verified = \(verified) WHERE id = \(user)")
        }
    }

    /// Erases an account's personal data (API.md `DELETE /v1/me`): identifiers, name, home,
    /// password, sessions, devices and pending codes; every delivery addressed to the person
    /// (pending ones are never sent); and their name wherever it was written down at the time
    /// (message events, a missed check-in's alert text, alert pushes, invitations they sent).
    /// The row stays, as "deleted user", so messages keep an author. Memberships are the
    /// caller's to end first (with their events).
    public func erase(user: UUID, tenant: UUID, on connection: PostgresConnection) throws {
        let deleted = Self.deletedName
        try connection.query("""
            WITH gone AS (
                DELETE FROM outbox o USING users u
                WHERE u.id = \(user) AND (o.recipient = u.email OR o.recipient = u.phone
                                          OR o.recipient IN (SELECT token FROM devices WHERE user_id = \(user))
                                          OR o.data->>'walker_id' = \(user.lowercasedText))
                RETURNING o.id)
            DELETE FROM outbox_jobs WHERE outbox_id IN (SELECT id FROM gone)
            """)
        try connection.query("""
            UPDATE messages m SET text = \(CheckinStore.missedText(name: deleted)) FROM users u
            WHERE u.id = \(user) AND m.author_type = 'user' AND m.author_id = \(user) AND m.template = 'missed_checkin'
              AND m.text = u.display_name || \(CheckinStore.missedText(name: ""))
            """)
        try connection.query("""
            UPDATE group_events e
            SET data = jsonb_set(CASE WHEN e.data->>'template' = 'missed_checkin' AND e.data->>'text' = u.display_name || \(CheckinStore.missedText(name: ""))
                                      THEN jsonb_set(e.data, '{text}', to_jsonb(\(CheckinStore.missedText(name: deleted))::text)) ELSE e.data END,
                                 '{author,display_name}', to_jsonb(\(deleted)::text))
            FROM users u
            WHERE u.id = \(user) AND e.event = 'message.created' AND e.actor_type = 'user' AND e.actor_id = \(user)
            """)
        try connection.query("""
            UPDATE outbox o
            SET data = jsonb_set(CASE WHEN o.data->'alert'->>'text' = u.display_name || \(CheckinStore.missedText(name: ""))
                                      THEN jsonb_set(o.data, '{alert,text}', to_jsonb(\(CheckinStore.missedText(name: deleted))::text))
                                      ELSE o.data END,
                                 '{alert,author,display_name}', to_jsonb(\(deleted)::text))
            FROM users u
            WHERE u.id = \(user) AND o.data->'alert'->'author'->>'id' = \(user.lowercasedText)
            """)
        try connection.query("""
            UPDATE outbox SET data = jsonb_set(data, '{inviter}', to_jsonb(\(deleted)::text))
            WHERE data->>'inviter_id' = \(user.lowercasedText)
            """)
        try connection.query("""
            UPDATE users SET email = NULL, phone = NULL, email_verified = false, phone_verified = false,
                             password_hash = NULL, display_name = \(deleted), home = NULL, deleted_at = now()
            WHERE id = \(user)
            """)
        try deleteSessions(of: user, tenant: tenant, on: connection)
        try connection.query("DELETE FROM devices WHERE user_id = \(user)")
        // Their photos and files go from every message they are in (blobs with them, unless shared).
        try connection.query("DELETE FROM media WHERE uploader_type = 'user' AND uploader_id = \(user)")
        try connection.query("DELETE FROM contact_verifications WHERE user_id = \(user)")
        // Where they were while sharing their location on an alert (the jobs hold ids only, and end on their own).
        try connection.query("DELETE FROM live_locations WHERE user_id = \(user)")
        // Their check-ins (notes, trails, places; the alerts they raised stay, as their messages do),
        // and their name and notes in the check-in events the groups kept.
        try CheckinStore().stripAlertTrails(user: user, on: connection)
        try connection.query("DELETE FROM checkins WHERE user_id = \(user)")
        try connection.query("DELETE FROM emergency_contacts WHERE user_id = \(user)")
        // Their PINs, preferences and check-in requests either way (notes, places shared).
        try connection.query("DELETE FROM user_pins WHERE user_id = \(user)")
        try connection.query("DELETE FROM user_preferences WHERE user_id = \(user)")
        try connection.query("""
            WITH gone AS (DELETE FROM checkin_requests WHERE requester_id = \(user) OR addressee_id = \(user) RETURNING id)
            DELETE FROM checkin_request_expiries WHERE request_id IN (SELECT id FROM gone)
            """)
        try connection.query("""
            UPDATE group_events SET data = CASE WHEN event = 'checkin.started'
                                                THEN jsonb_set(jsonb_set(data, '{user,display_name}', to_jsonb(\(deleted)::text)), '{note}', '""')
                                                ELSE jsonb_set(data, '{display_name}', to_jsonb(\(deleted)::text)) END
            WHERE actor_type = 'user' AND actor_id = \(user) AND event LIKE 'checkin.%'
            """)
    }

    /// How an erased account is named wherever its messages are shown.
    public static let deletedName = "deleted user"

    // MARK: - Sessions

    /// A new session, and the tenant's sweep brought forward to its expiry when that is sooner.
    /// `client` (the `User-Agent`) and `network` (the address cut to its /24 or /48) are what
    /// the user's list of sessions shows of it. An account the operator suspended gets none:
    /// 403 `suspended` (asked only after the password or code proved who is asking).
    public func createSession(tenant: UUID, tokenHash: [UInt8], user: UUID, lifetime: Int, client: String? = nil, network: String? = nil,
                              on connection: PostgresConnection) throws -> Date {
        guard let expires = try connection.query("""
            INSERT INTO sessions (tenant_id, token_hash, user_id, expires_at, client, network)
            SELECT \(tenant), \(Data(tokenHash)), \(user), now() + \(lifetime) * interval '1 second',
                   \(client.map { String($0.prefix(200)) }), \(network.map { String($0.prefix(64)) })
            FROM users WHERE id = \(user) AND suspended_at IS NULL
            RETURNING expires_at
            """).first?.decode(Date.self, "expires_at") else {
            throw APIError(.forbidden, code: .suspended, message: "this account is suspended; the people who run this service can say why")
        }
        try connection.query("""
            INSERT INTO session_sweeps (tenant_id, due_at) VALUES (\(tenant), \(expires))
            ON CONFLICT (tenant_id) DO UPDATE SET due_at = excluded.due_at WHERE session_sweeps.due_at > excluded.due_at
            """)
        return expires
    }

    /// The user of a live session, sliding its expiry forward (written at most once a minute),
    /// never past `maxAge` seconds after sign-in. The user becomes the transaction's viewer
    /// (`PostgresConnection.setViewer`): what is hidden from them stays hidden for the rest of it.
    public func sessionUser(tokenHash: [UInt8], lifetime: Int, maxAge: Int, on connection: PostgresConnection) throws -> User? {
        try sessionUser(connection.query(sessionUserQuery(tokenHash: tokenHash)), tokenHash: tokenHash, lifetime: lifetime, maxAge: maxAge,
                        on: connection)
    }

    /// `sessionUser`'s lookup, for a caller that sends it with BEGIN (`withTenantTransaction(_:opening:)`).
    public func sessionUserQuery(tokenHash: [UInt8]) -> SQLQuery {
        sessionQuery(tokenHash: tokenHash, member: nil)
    }

    /// The user `sessionUserQuery` found, if any, the session's expiry slid forward.
    public func sessionUser(_ found: PostgresResult, tokenHash: [UInt8], lifetime: Int, maxAge: Int, on connection: PostgresConnection) throws -> User? {
        guard let row = found.first else { return nil }
        try slideExpiry(row, tokenHash: tokenHash, lifetime: lifetime, maxAge: maxAge, on: connection)
        return try decode(row)
    }

    /// The user of a live session with their role in `group`, the membership row locked
    /// FOR UPDATE, in one statement (the common case of every group request), for a caller
    /// that sends it with BEGIN (`withTenantTransaction(_:opening:)`); no row when the session
    /// is not live or the user is not a member (`sessionUser` then tells which). The user
    /// becomes the transaction's viewer, as with `sessionUser`. `asking`: a boolean SQL
    /// expression the same statement answers (`sessionMember`'s `answer`), in which
    /// `Self.caller` is the caller's user id; so a use case asks its question in the round trip
    /// that opens the transaction, not one of its own.
    public func sessionMemberQuery(tokenHash: [UInt8], group: UUID, asking: SQLQuery? = nil) -> SQLQuery {
        sessionQuery(tokenHash: tokenHash, member: group, asking: asking)
    }

    /// The caller's user id in the question of `sessionMemberQuery(..., asking:)`.
    public static let caller: SQLQuery = "u.id"

    /// The one session lookup both use (what makes a session live is written once): the user,
    /// whether the session is stale, the viewer set; with `member`, the membership's role and
    /// its row locked.
    private func sessionQuery(tokenHash: [UInt8], member group: UUID?, asking question: SQLQuery? = nil) -> SQLQuery {
        let membership: SQLQuery = group.map { "JOIN memberships m ON m.tenant_id = u.tenant_id AND m.user_id = u.id AND m.group_id = \($0)" } ?? ""
        let answer: SQLQuery = question.map { ", (\(fragment: $0))::bool AS answer" } ?? ""
        return """
            SELECT u.id, u.tenant_id, u.email, u.phone, u.email_verified, u.phone_verified, u.display_name,
                   u.password_hash, u.created_at, s.last_used_at < now() - interval '1 minute' AS stale,
                   set_config('roost.viewer_id', u.id::text, true) AS viewer\(unsafeRaw: group == nil ? "" : ", m.role, CASE WHEN m.muted_until > now() THEN m.muted_until END AS muted_until")\(fragment: answer)
            FROM sessions s
            JOIN users u ON u.tenant_id = s.tenant_id AND u.id = s.user_id
            \(fragment: membership)
            WHERE \(fragment: Self.liveSession(tokenHash: tokenHash))
            \(unsafeRaw: group == nil ? "" : "FOR UPDATE OF m")
            """
    }

    /// What makes a session live, of `sessions s` joined to its `users u`.
    private static func liveSession(tokenHash: [UInt8]) -> SQLQuery {
        liveSession(tokenHash: "\(Data(tokenHash))")
    }

    /// The same, the token's hash an SQL expression.
    private static func liveSession(tokenHash: SQLQuery) -> SQLQuery {
        "s.token_hash = \(fragment: tokenHash) AND s.expires_at > now() AND u.deleted_at IS NULL AND u.suspended_at IS NULL"
    }

    /// A gate for a gated append (`GroupEventLog.appending(..., gate:)`): one row, the caller's
    /// `display_name`, when the session is live and is `user`'s, the user is a member of `group`
    /// whom no manager has muted, and `also` (a boolean SQL expression in which `Self.caller`
    /// is the user) holds; the membership row locked FOR UPDATE, as `sessionMemberQuery` locks
    /// it. No row otherwise, for whatever reason: the caller asks again the usual way to learn it.
    public func liveMemberGate(tokenHash: [UInt8], user: UUID, group: UUID, also: SQLQuery) -> SQLQuery {
        """
        SELECT u.display_name FROM sessions s
        JOIN users u ON u.tenant_id = s.tenant_id AND u.id = s.user_id
        JOIN memberships m ON m.tenant_id = u.tenant_id AND m.user_id = u.id AND m.group_id = \(group)
        WHERE \(fragment: Self.liveSession(tokenHash: tokenHash)) AND u.id = \(user) AND (m.muted_until IS NULL OR m.muted_until <= now())
          AND \(fragment: also)
        FOR UPDATE OF m
        """
    }

    /// `liveMemberGate` for many lines at once: each row of `lines` (a `WITH` item with columns
    /// `n`, `token_hash`, `user_id` and `group_id`) that the gate would admit, with the user's
    /// `display_name`, where `also` (read with the line as `l`) holds; the memberships locked
    /// FOR UPDATE in the order of `n`, so that commits that lock the same ones lock them in the
    /// same order.
    public func liveMembersGate(lines: String, also: SQLQuery) -> SQLQuery {
        """
        SELECT l.*, u.display_name FROM \(unsafeRaw: lines) l
        CROSS JOIN sessions s
        JOIN users u ON u.tenant_id = s.tenant_id AND u.id = s.user_id
        JOIN memberships m ON m.tenant_id = u.tenant_id AND m.user_id = u.id AND m.group_id = l.group_id
        WHERE \(fragment: Self.liveSession(tokenHash: "l.token_hash")) AND u.id = l.user_id AND (m.muted_until IS NULL OR m.muted_until <= now())
          AND \(fragment: also)
        ORDER BY l.n
        FOR UPDATE OF m
        """
    }

    /// The statement (or `WITH` item's body) that moves a session's expiry on when it was last
    /// used over a minute ago and `when` (a boolean SQL expression) holds.
    public func slideStatement(tokenHash: [UInt8], lifetime: Int, maxAge: Int, when condition: SQLQuery = "true") -> SQLQuery {
        slideStatement(sessions: "token_hash = \(Data(tokenHash))", lifetime: lifetime, maxAge: maxAge, when: condition)
    }

    /// The same for the sessions `which` (a boolean SQL expression over `sessions`) names.
    public func slideStatement(sessions which: SQLQuery, lifetime: Int, maxAge: Int, when condition: SQLQuery = "true") -> SQLQuery {
        """
        UPDATE sessions SET last_used_at = now(),
                            expires_at = least(now() + \(lifetime) * interval '1 second', created_at + \(maxAge) * interval '1 second')
        WHERE \(fragment: which) AND last_used_at < now() - interval '1 minute' AND \(fragment: condition)
        """
    }

    /// The member `sessionMemberQuery` found, if any, with their role, until when they are muted
    /// (nil: not), and the answer to its question (nil when none was asked); the session's expiry slid forward.
    public func sessionMember(_ found: PostgresResult, tokenHash: [UInt8], lifetime: Int, maxAge: Int, on connection: PostgresConnection) throws
        -> (user: User, role: String, mutedUntil: Date?, answer: Bool?)?
    {
        guard let row = found.first else { return nil }
        try slideExpiry(row, tokenHash: tokenHash, lifetime: lifetime, maxAge: maxAge, on: connection)
        return (try decode(row), try row.decode(String.self, "role"), try row.decode(Date?.self, "muted_until"),
                row.columnNames.contains("answer") ? try row.decode(Bool?.self, "answer") : nil)
    }

    /// Whether `user`, who is no member of `group`, is a coordinator of the tenant and the group
    /// exists (then they act as its admin): nil when not; else the answer to `question` (in
    /// which `UserStore.caller` is the user), nil when none was asked.
    public func coordinatorOf(group: UUID, user: UUID, asking question: SQLQuery?, on connection: PostgresConnection) throws -> Bool?? {
        let answer: SQLQuery = question.map { ", (\(fragment: $0))::bool AS answer" } ?? ""
        guard let row = try connection.query("""
            SELECT true AS coordinator\(fragment: answer) FROM users u
            WHERE u.id = \(user) AND u.coordinator AND u.deleted_at IS NULL AND u.suspended_at IS NULL
              AND EXISTS (SELECT 1 FROM groups g WHERE g.id = \(group))
            """).first else { return nil }
        return .some(row.columnNames.contains("answer") ? try row.decode(Bool?.self, "answer") : nil)
    }

    /// Moves a session's expiry on when its row says it was last used over a minute ago.
    private func slideExpiry(_ row: PostgresRow, tokenHash: [UInt8], lifetime: Int, maxAge: Int, on connection: PostgresConnection) throws {
        guard try row.decode(Bool.self, "stale") else { return }
        try connection.query(slideStatement(tokenHash: tokenHash, lifetime: lifetime, maxAge: maxAge))
    }

    /// Whether the session whose token hash is `hex` exists and has not expired: a lookup by the
    /// primary key (the hash is decoded for the comparison, never the column encoded, which
    /// would scan every session of the tenant).
    public func sessionIsActive(tokenHashHex hex: String, on connection: PostgresConnection) throws -> Bool {
        guard hex.utf8.count == 64, hex.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return false }
        return try connection.query("SELECT 1 FROM sessions WHERE token_hash = decode(\(hex), 'hex') AND expires_at > now()").first != nil
    }

    /// A tenant whose earliest session expiry may have passed, its sweep row locked until the
    /// transaction ends (other nodes skip it); nil when no tenant is due.
    public func claimSessionSweep(on connection: PostgresConnection) throws -> UUID? {
        try connection.query("""
            SELECT tenant_id FROM session_sweeps WHERE due_at <= now() ORDER BY due_at LIMIT 1 FOR UPDATE SKIP LOCKED
            """).first?.decode(UUID.self, "tenant_id")
    }

    /// Deletes the transaction's tenant's sessions that have expired (at most `limit`), tells
    /// every node, so streams signed in with them close with 1008, and sets the tenant's next
    /// sweep to its earliest remaining expiry (at the latest a day on, which bounds how long a
    /// shortened session lifetime can leave a stream open); how many ended.
    @discardableResult
    public func endExpiredSessions(tenant: UUID, limit: Int, on connection: PostgresConnection) throws -> Int {
        let ended = try connection.query("""
            DELETE FROM sessions WHERE token_hash IN (
                SELECT token_hash FROM sessions WHERE tenant_id = \(tenant) AND expires_at <= now()
                LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            RETURNING token_hash, user_id
            """).rows.map { (hash: try $0.decode(Data.self, "token_hash"), user: try $0.decode(UUID.self, "user_id")) }
        for (hash, user) in ended {
            try GroupEventLog.notify(.sessionEnded(tenant: tenant, user: user, tokenHash: Digest.hex(Array(hash))), on: connection)
        }
        try connection.query("""
            WITH earliest AS (SELECT min(expires_at) AS at FROM sessions WHERE tenant_id = \(tenant)),
            kept AS (
                UPDATE session_sweeps SET due_at = least(earliest.at, now() + interval '1 day') FROM earliest
                WHERE tenant_id = \(tenant) AND earliest.at IS NOT NULL RETURNING 1)
            DELETE FROM session_sweeps WHERE tenant_id = \(tenant) AND NOT EXISTS (SELECT 1 FROM kept)
            """)
        return ended.count
    }

    /// A user's live sessions, newest first.
    public func sessions(of user: UUID, on connection: PostgresConnection) throws -> [SessionRecord] {
        try connection.query("""
            SELECT id, token_hash, created_at, last_used_at, expires_at, client, network FROM sessions
            WHERE user_id = \(user) AND expires_at > now() ORDER BY created_at DESC, id DESC
            """).rows.map {
            SessionRecord(id: try $0.decode(UUID.self, "id"), tokenHash: Array(try $0.decode(Data.self, "token_hash")),
                          createdAt: try $0.decode(Date.self, "created_at"), lastUsedAt: try $0.decode(Date.self, "last_used_at"),
                          expiresAt: try $0.decode(Date.self, "expires_at"), client: try $0.decode(String?.self, "client"),
                          network: try $0.decode(String?.self, "network"))
        }
    }

    /// Ends one of `user`'s sessions by its id, telling every node; false when they have none such.
    public func deleteSession(id: UUID, user: UUID, tenant: UUID, on connection: PostgresConnection) throws -> Bool {
        guard let hash = try connection.query("DELETE FROM sessions WHERE id = \(id) AND user_id = \(user) RETURNING token_hash").first?
            .decode(Data.self, "token_hash") else { return false }
        try GroupEventLog.notify(.sessionEnded(tenant: tenant, user: user, tokenHash: Digest.hex(Array(hash))), on: connection)
        return true
    }

    /// Ends every session of `user` but `kept` (the one asking), each told to every node by
    /// its own notice, so a stream of a session created after it is not closed; how many ended.
    @discardableResult
    public func deleteSessions(of user: UUID, except kept: [UInt8]?, tenant: UUID, on connection: PostgresConnection) throws -> Int {
        let ended = try connection.query("""
            DELETE FROM sessions WHERE user_id = \(user) AND (\(kept.map { Data($0) })::bytea IS NULL OR token_hash <> \(kept.map { Data($0) }))
            RETURNING token_hash
            """).rows.map { try $0.decode(Data.self, "token_hash") }
        for hash in ended { try GroupEventLog.notify(.sessionEnded(tenant: tenant, user: user, tokenHash: Digest.hex(Array(hash))), on: connection) }
        return ended.count
    }

    /// Ends every session of `user` and tells every node (their streams close with 1008); how many ended.
    @discardableResult
    public func deleteSessions(of user: UUID, tenant: UUID, on connection: PostgresConnection) throws -> Int {
        let ended = try connection.query("DELETE FROM sessions WHERE user_id = \(user)").affectedRows
        try GroupEventLog.notify(.accountEnded(tenant: tenant, user: user), on: connection)
        return ended
    }

    /// Ends one session, and tells every node (its streams close with 1008); true if it existed.
    @discardableResult
    public func deleteSession(tokenHash: [UInt8], on connection: PostgresConnection) throws -> Bool {
        guard let row = try connection.query("DELETE FROM sessions WHERE token_hash = \(Data(tokenHash)) RETURNING tenant_id, user_id").first
        else { return false }
        try GroupEventLog.notify(.sessionEnded(tenant: try row.decode(UUID.self, "tenant_id"), user: try row.decode(UUID.self, "user_id"),
                                               tokenHash: Digest.hex(tokenHash)), on: connection)
        return true
    }

    private func decode(_ row: PostgresRow) throws -> User {
        User(
            id: try row.decode(UUID.self, "id"),
            tenantID: try row.decode(UUID.self, "tenant_id"),
            email: try row.decode(String?.self, "email"),
            phone: try row.decode(String?.self, "phone"),
            emailVerified: try row.decode(Bool.self, "email_verified"),
            phoneVerified: try row.decode(Bool.self, "phone_verified"),
            displayName: try row.decode(String.self, "display_name"),
            passwordHash: try row.decode(String?.self, "password_hash"),
            createdAt: try row.decode(Date.self, "created_at"))
    }
}

/// A signed-in session as its user's list shows it (the token hash to tell the current one).
public struct SessionRecord: Sendable, Equatable {
    public let id: UUID
    public let tokenHash: [UInt8]
    public let createdAt: Date
    public let lastUsedAt: Date
    public let expiresAt: Date
    public let client: String?
    public let network: String?
}
