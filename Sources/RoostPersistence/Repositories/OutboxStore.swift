import Foundation
import RoostProtocol

/// One delivery to the outside world (API.md "Outbound delivery").
public struct OutboxMessage: Sendable, Equatable {
    public let id: UUID
    public let tenantID: UUID
    public let channel: OutboxChannel
    public let recipient: String
    public let template: TemplateName
    /// The `data` object as JSON text.
    public let data: String
    public let attempts: Int
    /// A push's device platform (`data.platform`), nil for email and SMS.
    public let platform: String?
    /// The member it is for, when it is one (pushes): their preferences apply.
    public let userID: UUID?
    /// An alert delivery's severity (`data.alert.alert.severity`).
    public let severity: String?
    /// Its lane (sql/0030_delivery_lanes.sql): 0 critical, 1 normal, 2 bulk.
    public var lane = DeliveryLane.normal
    /// A Web Push device's subscription, when the row is a push to one.
    public var subscription: WebPushSubscription?
    /// The member's quiet hours, when the row is a push to a member who set them.
    public var quietHours: NotificationPreferences.QuietHours?
    /// When the change that queued it committed (about: when its row was written).
    public var createdAt: Date?
}

/// How soon a delivery goes (sql/0030_delivery_lanes.sql): a claim takes critical rows first,
/// then normal, then bulk, tenants taking turns within each.
public enum DeliveryLane: Int, Sendable, CaseIterable, CustomStringConvertible {
    case critical = 0, normal = 1, bulk = 2

    public var description: String {
        switch self {
        case .critical: "critical"
        case .normal: "normal"
        case .bulk: "bulk"
        }
    }
}

/// A job claimed for delivery.
public struct ClaimedDelivery: Sendable, Equatable {
    public let id: UUID
    public let tenant: UUID
    public let lane: DeliveryLane
}

/// What became of one delivery, as the worker writes it back (`OutboxStore.record`).
public struct DeliveryRecord: Sendable {
    public enum Step: Sendable {
        case delivered
        /// Tried again after `retryIn` seconds, or failed once it has had its attempts.
        case retry(error: String, retryIn: Double)
        /// Failed for good.
        case failed(error: String)
        /// Sent at `until`, no attempt counted.
        case postponed(until: Date)
    }

    public let id: UUID
    public let step: Step
    /// A Web Push endpoint that is gone: its devices are removed.
    public let goneEndpoint: String?

    public init(id: UUID, step: Step, goneEndpoint: String? = nil) {
        self.id = id
        self.step = step
        self.goneEndpoint = goneEndpoint
    }
}

/// The outbox: written in the transaction of the change that caused it, delivered by
/// `OutboxWorker` through `outbox_jobs` (sql/0003_outbox_jobs.sql).
public struct OutboxStore: Sendable {
    public init() {}

    /// Queues a delivery; call inside the causing change's tenant transaction.
    @discardableResult
    public func enqueue(tenant: UUID, channel: OutboxChannel, recipient: String, template: TemplateName, data: RawJSON,
                        on connection: PostgresConnection) throws -> UUID {
        let id = try connection.query("""
            INSERT INTO outbox (tenant_id, channel, recipient, template, data)
            VALUES (\(tenant), \(channel), \(recipient), \(template), \(data)) RETURNING id
            """).rows[0].decode(UUID.self, "id")
        try connection.query("INSERT INTO outbox_jobs (outbox_id, tenant_id) VALUES (\(id), \(tenant))")
        return id
    }

    /// Queues a delivery to someone known by one address (an invitation's, an escalation
    /// contact's): by email to an email address, otherwise by SMS to the phone number.
    @discardableResult
    public func enqueue(tenant: UUID, email: String?, phone: String?, template: TemplateName, data: RawJSON,
                        on connection: PostgresConnection) throws -> UUID {
        precondition(email != nil || phone != nil, "a delivery needs an address")
        return try enqueue(tenant: tenant, channel: email != nil ? .email : .sms, recipient: email ?? phone!, template: template, data: data,
                           on: connection)
    }

    /// Claims up to `limit` due jobs for `lease` seconds: at most `perTenant` of any one tenant,
    /// each tenant's lowest lane first, and then, across tenants, critical before normal before
    /// bulk and within a lane tenants taking turns (each tenant's first job, then each one's
    /// second...), tenants with the most urgent and longest-waiting job first. No tenant needed:
    /// ids and times only. A tenant's ten thousand queued pushes so cost another tenant's
    /// verification code one place in the next claim.
    public func claim(limit: Int, perTenant: Int, lease: Int, on connection: PostgresConnection) throws -> [ClaimedDelivery] {
        try connection.query("""
            WITH due AS (
                SELECT tenant_id FROM outbox_jobs
                WHERE next_attempt_at <= now() AND (lease_until IS NULL OR lease_until < now())
                GROUP BY tenant_id ORDER BY min(lane), min(next_attempt_at) LIMIT \(limit)),
            picked AS (
                SELECT j.outbox_id, j.lane, row_number() OVER (PARTITION BY due.tenant_id ORDER BY j.lane, j.next_attempt_at) AS turn
                FROM due CROSS JOIN LATERAL (
                    SELECT outbox_id, lane, next_attempt_at FROM outbox_jobs o
                    WHERE o.tenant_id = due.tenant_id AND o.next_attempt_at <= now() AND (o.lease_until IS NULL OR o.lease_until < now())
                    ORDER BY o.lane, o.next_attempt_at LIMIT \(perTenant) FOR UPDATE SKIP LOCKED) j
                ORDER BY j.lane, turn LIMIT \(limit)),
            leased AS (
                UPDATE outbox_jobs j SET lease_until = now() + \(lease) * interval '1 second'
                FROM picked p WHERE j.outbox_id = p.outbox_id
                RETURNING j.outbox_id, j.tenant_id, j.lane, p.turn)
            SELECT outbox_id, tenant_id, lane FROM leased ORDER BY lane, turn, tenant_id
            """).rows.map {
            ClaimedDelivery(id: try $0.decode(UUID.self, "outbox_id"), tenant: try $0.decode(UUID.self, "tenant_id"),
                            lane: DeliveryLane(rawValue: try $0.decode(Int.self, "lane")) ?? .normal)
        }
    }

    /// The pending messages of claimed jobs (inside their tenant's transaction), in one
    /// statement: with each push's Web Push subscription and its member's quiet hours.
    public func messages(_ ids: [UUID], on connection: PostgresConnection) throws -> [OutboxMessage] {
        try connection.query("""
            SELECT o.id, o.tenant_id, o.channel, o.recipient, o.template, o.data::text AS data, o.attempts, o.data->>'platform' AS platform,
                   o.user_id, o.data->'alert'->'alert'->>'severity' AS severity, o.lane, o.created_at, d.p256dh, d.auth,
                   to_char(p.quiet_start, 'HH24:MI') AS quiet_start, to_char(p.quiet_end, 'HH24:MI') AS quiet_end, p.quiet_time_zone
            FROM outbox o
            LEFT JOIN LATERAL (
                SELECT p256dh, auth FROM devices
                WHERE o.channel = 'push' AND tenant_id = o.tenant_id AND user_id = o.user_id AND platform IN ('webpush', 'unifiedpush') AND token = o.recipient
                  AND p256dh IS NOT NULL
                LIMIT 1) d ON true
            LEFT JOIN user_preferences p ON o.channel = 'push' AND p.tenant_id = o.tenant_id AND p.user_id = o.user_id
            WHERE o.id = ANY(\(ids)::uuid[]) AND o.status = 'pending'
            """).rows.map { row in
            var message = OutboxMessage(
                id: try row.decode(UUID.self, "id"), tenantID: try row.decode(UUID.self, "tenant_id"),
                channel: try row.decode(OutboxChannel.self, "channel"), recipient: try row.decode(String.self, "recipient"),
                template: try row.decode(TemplateName.self, "template"), data: try row.decode(String.self, "data"),
                attempts: try row.decode(Int.self, "attempts"), platform: try row.decode(String?.self, "platform"),
                userID: try row.decode(UUID?.self, "user_id"), severity: try row.decode(String?.self, "severity"))
            message.lane = DeliveryLane(rawValue: try row.decode(Int.self, "lane")) ?? .normal
            message.createdAt = try row.decode(Date.self, "created_at")
            if let p256dh = try row.decode(Data?.self, "p256dh"), let auth = try row.decode(Data?.self, "auth") {
                message.subscription = WebPushSubscription(endpoint: message.recipient, p256dh: Array(p256dh), auth: Array(auth))
            }
            if let start = try row.decode(String?.self, "quiet_start"), let end = try row.decode(String?.self, "quiet_end"),
               let zone = try row.decode(String?.self, "quiet_time_zone") {
                message.quietHours = .init(start: start, end: end, timeZone: zone)
            }
            return message
        }
    }

    /// Writes back what became of a batch of deliveries (inside their tenant's transaction): one
    /// statement for those delivered, one for those that failed, one for those postponed, one
    /// for gone devices, whatever the batch's size. A delivered row loses its secrets; a failed
    /// one is tried again after its wait or, once it has had `maxAttempts` (or at once when it
    /// failed for good), marked `failed` and its secrets scrubbed. Returns the rows now failed.
    @discardableResult
    public func record(_ records: [DeliveryRecord], maxAttempts: Int, on connection: PostgresConnection) throws -> [UUID] {
        var delivered: [UUID] = []
        var failedIDs: [UUID] = [], errors: [String] = [], waits: [String] = [], permanent: [String] = []
        var postponed: [UUID] = [], until: [String] = []
        for record in records {
            switch record.step {
            case .delivered: delivered.append(record.id)
            case .retry(let error, let retryIn):
                failedIDs.append(record.id); errors.append(Self.storable(error)); waits.append(String(max(0, retryIn))); permanent.append("f")
            case .failed(let error):
                failedIDs.append(record.id); errors.append(Self.storable(error)); waits.append("0"); permanent.append("t")
            case .postponed(let date):
                postponed.append(record.id); until.append(PostgresTimestamp.format(date))
            }
        }
        if !delivered.isEmpty {
            try connection.query("""
                WITH done AS (
                    UPDATE outbox SET status = 'delivered', attempts = attempts + 1, delivered_at = now(), last_error = NULL,
                                      data = data - \(Self.secretFields)::text[]
                    WHERE id = ANY(\(delivered)::uuid[]) AND status = 'pending')
                DELETE FROM outbox_jobs WHERE outbox_id = ANY(\(delivered)::uuid[])
                """)
        }
        var failedForGood: [UUID] = []
        if !failedIDs.isEmpty {
            failedForGood = try connection.query("""
                WITH input AS (
                    SELECT * FROM unnest(\(failedIDs)::uuid[], \(errors)::text[], \(waits)::text[]::float8[], \(permanent)::text[]::bool[])
                        AS i(id, error, wait, permanent)),
                marked AS (
                    UPDATE outbox o SET attempts = o.attempts + 1, last_error = i.error,
                                        status = CASE WHEN i.permanent OR o.attempts + 1 >= \(maxAttempts) THEN 'failed' ELSE 'pending' END,
                                        next_attempt_at = now() + i.wait * interval '1 second',
                                        data = CASE WHEN i.permanent OR o.attempts + 1 >= \(maxAttempts)
                                                    THEN o.data - \(Self.secretFields)::text[] ELSE o.data END
                    FROM input i WHERE o.id = i.id AND o.status = 'pending'
                    RETURNING o.id, o.status, o.next_attempt_at),
                ended AS (
                    DELETE FROM outbox_jobs j USING marked m WHERE j.outbox_id = m.id AND m.status = 'failed'),
                again AS (
                    UPDATE outbox_jobs j SET next_attempt_at = m.next_attempt_at, lease_until = NULL
                    FROM marked m WHERE j.outbox_id = m.id AND m.status = 'pending')
                SELECT id FROM marked WHERE status = 'failed'
                """).rows.map { try $0.decode(UUID.self, "id") }
        }
        if !postponed.isEmpty {
            try connection.query("""
                WITH input AS (SELECT * FROM unnest(\(postponed)::uuid[], \(until)::text[]::timestamptz[]) AS i(id, until)),
                held AS (
                    UPDATE outbox o SET next_attempt_at = i.until FROM input i WHERE o.id = i.id AND o.status = 'pending')
                UPDATE outbox_jobs j SET next_attempt_at = i.until, lease_until = NULL FROM input i WHERE j.outbox_id = i.id
                """)
        }
        let gone = records.compactMap(\.goneEndpoint)
        if !gone.isEmpty {
            try connection.query("DELETE FROM devices WHERE platform IN ('webpush', 'unifiedpush') AND token = ANY(\(gone)::text[])")
        }
        return failedForGood
    }

    /// Fields of `data` that are secrets for their recipient, scrubbed once a row is done.
    static let secretFields = ["token", "code"]

    /// A delivery's error as a row can keep it, whatever a remote server put in it: at most 500
    /// characters, every control character (NUL, which PostgreSQL text cannot hold, among them)
    /// shown as U+FFFD, so no answer of a mail relay or push service can make the bookkeeping
    /// of its own failure fail.
    static func storable(_ error: String) -> String {
        String(String.UnicodeScalarView(error.unicodeScalars.prefix(500).map { $0.properties.generalCategory == .control ? "\u{FFFD}" : $0 }))
    }

    /// Alert emails and texts one person gets in an hour, whatever raised the alerts (a bridge
    /// firing thirty red alerts is six messages, not thirty); the app and pushes show the rest.
    public static let alertFallbacksPerRecipientPerHour = 6

    /// The condition that the person of `row` (an alias with `tenant_id` and `user_id`) had fewer
    /// than the hour's alert emails and texts: one place for both ways an alert reaches a person
    /// outside the app.
    static func underFallbackBudget(_ row: String) -> String {
        """
        (SELECT count(*) FROM outbox h
         WHERE h.tenant_id = \(row).tenant_id AND h.user_id = \(row).user_id AND h.template = 'alert' AND h.channel <> 'push'
           AND h.created_at > now() - interval '1 hour') < \(alertFallbacksPerRecipientPerHour)
        """
    }

    /// Lines a digest shows one by one (the rest are counted in `more`).
    static let digestLines = 10

    /// A digest's data with one more item, `line` (SQL text) being its line: `{count, lines, more}`.
    static func digestAppended(_ data: String, line: String) -> String {
        """
        jsonb_build_object('count', (\(data)->>'count')::int + 1,
                           'lines', CASE WHEN (\(data)->>'count')::int < \(digestLines) THEN (\(data)->>'lines') || E'\\n' || \(line)
                                         ELSE \(data)->>'lines' END,
                           'more', greatest(0, (\(data)->>'count')::int + 1 - \(digestLines)))
        """
    }

    /// The statement's end for alert fallbacks, after a CTE `eligible` of (tenant_id, channel,
    /// recipient, user_id, data) rows: those under the hour's budget are queued as `alert`
    /// deliveries; for the others the alert joins their pending `alert_digest` ("N more alerts",
    /// sent an hour on), or starts one. Selects `eligible`, `queued` and `held` counts.
    static let fallbackTail = """
        judged AS (
            SELECT e.*, \(underFallbackBudget("e")) AS under FROM eligible e),
        queued AS (
            INSERT INTO outbox (tenant_id, channel, recipient, template, user_id, data)
            SELECT e.tenant_id, e.channel, e.recipient, 'alert', e.user_id, e.data FROM judged e WHERE e.under
            RETURNING id, tenant_id),
        jobs AS (
            INSERT INTO outbox_jobs (outbox_id, tenant_id) SELECT id, tenant_id FROM queued RETURNING outbox_id),
        over AS (
            SELECT e.*, (e.data->>'group_name') || ': ' || coalesce(left(e.data->'alert'->>'text', 140), '') AS line
            FROM judged e WHERE NOT e.under),
        merged AS (
            UPDATE outbox o SET data = \(digestAppended("o.data", line: "v.line"))
            FROM over v
            WHERE o.tenant_id = v.tenant_id AND o.user_id = v.user_id AND o.template = 'alert_digest' AND o.status = 'pending'
              AND EXISTS (SELECT 1 FROM outbox_jobs j WHERE j.outbox_id = o.id AND j.lease_until IS NULL
                                                      AND j.next_attempt_at > now() + interval '5 seconds')
            RETURNING o.user_id),
        digests AS (
            INSERT INTO outbox (tenant_id, channel, recipient, template, user_id, data)
            SELECT v.tenant_id, v.channel, v.recipient, 'alert_digest', v.user_id, jsonb_build_object('count', 1, 'lines', v.line, 'more', 0)
            FROM over v WHERE v.user_id NOT IN (SELECT user_id FROM merged)
            RETURNING id, tenant_id),
        digest_jobs AS (
            INSERT INTO outbox_jobs (outbox_id, tenant_id, next_attempt_at)
            SELECT id, tenant_id, now() + interval '1 hour' FROM digests RETURNING outbox_id)
        SELECT (SELECT count(*) FROM eligible) AS eligible, (SELECT count(*) FROM jobs) AS queued, (SELECT count(*) FROM over) AS held
        """

    /// Adds `line` to the person's pending digest of `template` (`bridge_digest`), or starts one
    /// to be sent at `due`: what was held back from them goes out once, together.
    public func addToDigest(tenant: UUID, user: UUID, channel: OutboxChannel, recipient: String, template: TemplateName, line: String, due: Date,
                            on connection: PostgresConnection) throws {
        try connection.query("""
            WITH item AS (SELECT \(line)::text AS line),
            merged AS (
                UPDATE outbox o SET data = \(unsafeRaw: Self.digestAppended("o.data", line: "(SELECT line FROM item)"))
                WHERE o.tenant_id = \(tenant) AND o.user_id = \(user) AND o.template = \(template) AND o.status = 'pending'
                  AND EXISTS (SELECT 1 FROM outbox_jobs j WHERE j.outbox_id = o.id AND j.lease_until IS NULL
                                                          AND j.next_attempt_at > now() + interval '5 seconds')
                RETURNING o.id),
            made AS (
                INSERT INTO outbox (tenant_id, channel, recipient, template, user_id, data)
                SELECT \(tenant), \(channel), \(recipient), \(template), \(user), jsonb_build_object('count', 1, 'lines', (SELECT line FROM item), 'more', 0)
                WHERE NOT EXISTS (SELECT 1 FROM merged)
                RETURNING id, tenant_id)
            INSERT INTO outbox_jobs (outbox_id, tenant_id, next_attempt_at) SELECT id, tenant_id, \(due) FROM made
            """)
    }

    /// What became of a failed red alert's fallback.
    public enum Fallback: Sendable, Equatable {
        case queued
        /// Its person had `perHour` alert emails or texts in the last hour already.
        case heldBack
        /// Nothing to send: not a red alert's push, no proven address or the person turned it
        /// off, or the alert reached them another way.
        case none
    }

    /// After a red alert's push to a member failed for good: when none of their pushes of that
    /// alert is still pending or was delivered, and no fallback was sent yet, the alert goes to
    /// their verified email (or else phone) if their fallback allows it, and they had fewer than
    /// `alertFallbacksPerRecipientPerHour` in the last hour.
    @discardableResult
    public func enqueueFallback(afterFailed id: UUID, on connection: PostgresConnection) throws -> Fallback {
        let row = try connection.query("""
            WITH failed AS (
                SELECT tenant_id, user_id, data FROM outbox
                WHERE id = \(id) AND status = 'failed' AND channel = 'push' AND template = 'alert' AND user_id IS NOT NULL
                  AND data->'alert'->'alert'->>'severity' = 'red'),
            eligible AS (
                SELECT x.tenant_id, CASE WHEN a.email IS NOT NULL THEN 'email' ELSE 'sms' END AS channel, coalesce(a.email, a.phone) AS recipient,
                       x.user_id, jsonb_build_object('group_name', x.data->'group_name', 'alert', x.data->'alert', 'fallback', true) AS data
                FROM failed x
                JOIN users u ON u.tenant_id = x.tenant_id AND u.id = x.user_id AND u.deleted_at IS NULL
                LEFT JOIN user_preferences p ON p.tenant_id = x.tenant_id AND p.user_id = x.user_id
                CROSS JOIN LATERAL (SELECT CASE WHEN u.email_verified AND coalesce(p.fallback_email, true) THEN u.email END AS email,
                                           CASE WHEN u.phone_verified AND coalesce(p.fallback_sms, true) THEN u.phone END AS phone) a
                WHERE coalesce(a.email, a.phone) IS NOT NULL
                  AND NOT EXISTS (
                      SELECT 1 FROM outbox o
                      WHERE o.tenant_id = x.tenant_id AND o.user_id = x.user_id AND o.template = 'alert' AND o.id <> \(id)
                        AND (o.channel <> 'push' OR o.status IN ('pending', 'delivered'))
                        AND o.data->'alert'->>'group_id' = x.data->'alert'->>'group_id' AND o.data->'alert'->'seq' = x.data->'alert'->'seq')),
            \(unsafeRaw: Self.fallbackTail)
            """).rows[0]
        if try row.decode(Int.self, "queued") > 0 { return .queued }
        return try row.decode(Int.self, "eligible") > 0 ? .heldBack : .none
    }

    /// How long the oldest due delivery of each lane has waited, in seconds (no tenant needed:
    /// jobs only); lanes with nothing due are left out.
    public func oldestWaiting(on connection: PostgresConnection) throws -> [DeliveryLane: Double] {
        var waits: [DeliveryLane: Double] = [:]
        for row in try connection.query("""
            SELECT lane, extract(epoch FROM now() - min(next_attempt_at))::float8 AS wait
            FROM outbox_jobs WHERE next_attempt_at <= now() GROUP BY lane
            """).rows {
            if let lane = DeliveryLane(rawValue: try row.decode(Int.self, "lane")) { waits[lane] = try row.decode(Double.self, "wait") }
        }
        return waits
    }

    /// Jobs whose rows are no longer pending (delivered elsewhere, deleted with their tenant).
    public func dropJobs(_ ids: [UUID], on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM outbox_jobs WHERE outbox_id = ANY(\(ids)::uuid[])")
    }
}

/// A delivery that ran out of attempts, as `roost outbox list --failed` shows it.
public struct FailedDelivery: Sendable, Equatable {
    public let id: UUID
    public let channel: OutboxChannel
    public let template: TemplateName
    public let attempts: Int
    public let lastError: String?
    public let createdAt: Date
}

extension OutboxStore {
    /// Failed deliveries of the transaction's tenant, oldest first. The recipient is left out:
    /// operators see that a delivery failed and why, not to whom.
    public func failed(limit: Int, on connection: PostgresConnection) throws -> [FailedDelivery] {
        try connection.query("""
            SELECT id, channel, template, attempts, last_error, created_at FROM outbox
            WHERE status = 'failed' ORDER BY created_at, id LIMIT \(limit)
            """).rows.map {
            FailedDelivery(id: try $0.decode(UUID.self, "id"), channel: try $0.decode(OutboxChannel.self, "channel"),
                           template: try $0.decode(TemplateName.self, "template"), attempts: try $0.decode(Int.self, "attempts"),
                           lastError: try $0.decode(String?.self, "last_error"), createdAt: try $0.decode(Date.self, "created_at"))
        }
    }

    /// Puts a failed delivery back in the queue with a fresh set of attempts; false when the
    /// transaction's tenant has no failed delivery with that id.
    /// A failed delivery's template and data (JSON text), locked for a retry; nil when there is
    /// no failed delivery with that id in the transaction's tenant.
    public func failed(_ id: UUID, on connection: PostgresConnection) throws -> (template: String, data: String)? {
        try connection.query("SELECT template, data::text AS data FROM outbox WHERE id = \(id) AND status = 'failed' FOR UPDATE").first.map {
            (try $0.decode(String.self, "template"), try $0.decode(String.self, "data"))
        }
    }

    /// Puts a fresh secret (`token` or `code`) back in a delivery's data before it is retried.
    public func setSecret(_ id: UUID, field: String, value: String, on connection: PostgresConnection) throws {
        try connection.query("UPDATE outbox SET data = jsonb_set(data, ARRAY[\(field)]::text[], to_jsonb(\(value)::text)) WHERE id = \(id)")
    }

    public func retry(_ id: UUID, on connection: PostgresConnection) throws -> Bool {
        guard let tenant = try connection.query("""
            UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = now()
            WHERE id = \(id) AND status = 'failed' RETURNING tenant_id
            """).first?.decode(UUID.self, "tenant_id") else { return false }
        try connection.query("""
            INSERT INTO outbox_jobs (outbox_id, tenant_id) VALUES (\(id), \(tenant))
            ON CONFLICT (outbox_id) DO UPDATE SET next_attempt_at = now(), lease_until = NULL
            """)
        return true
    }
}

extension OutboxStore {
    /// An alert's pushes to a group: one `push` delivery (template `alert`) per registered device
    /// of every member but the author, and who was pushed (the receipts' "pushed", and whom the
    /// all clear reaches). When the alert has a location, each push carries how far the
    /// recipient's home is (`distance_m`, null when they set none), and members within the
    /// group's `nearby_m` get `critical: true`. A member who turned off pushes of the alert's
    /// severity gets none; for a red alert, a member with no device at all gets it by email or
    /// SMS instead, to their verified address, when their fallback allows it (API.md "Outbound
    /// delivery").
    ///
    /// Up to `inlineDevices` devices are queued here, in the alert's own transaction, in one
    /// set-based statement; a larger group gets one fanout job instead (sql/0032_fanouts.sql),
    /// which the delivery engine expands a batch of members at a time (`expandFanout`), so the
    /// alert commits, and reaches connected streams, as fast for ten thousand members as for
    /// ten. `committing`: nothing follows in the caller's transaction, so it commits with the
    /// last statement here. `managersOnly`: only the group's owner and admins are reached (an
    /// alert for them only, `Audience.managersOnly`). Returns how many deliveries were queued here.
    @discardableResult
    public func enqueueAlertPushes(group: UUID, seq: Int64, excluding author: UUID?, alert: RawJSON, red: Bool, inlineDevices: Int = 200,
                                   managersOnly: Bool = false, committing: Bool = false, on connection: PostgresConnection) throws -> Int {
        let roles: SQLQuery = managersOnly ? "AND m.role IN ('owner', 'admin')" : ""
        // The devices to push, counted no further than past the bound: queued here up to it, one
        // fanout job past it (never for the managers only: they are few, and a fanout reaches everyone).
        let members: SQLQuery = """
            SELECT m.tenant_id, m.group_id, m.user_id FROM memberships m
            WHERE m.group_id = \(group) AND m.user_id IS DISTINCT FROM \(author) \(fragment: roles)
              AND (\(managersOnly) OR (SELECT devices FROM probe) <= \(inlineDevices))
            """
        let queued = try connection.query("""
            WITH probe AS (
                SELECT count(*) AS devices FROM (
                    SELECT 1 FROM memberships m JOIN devices d ON d.tenant_id = m.tenant_id AND d.user_id = m.user_id
                    WHERE m.group_id = \(group) AND m.user_id IS DISTINCT FROM \(author) \(fragment: roles) LIMIT \(inlineDevices + 1)) counted),
            \(fragment: Self.alertPushes(members: members, seq: seq, alert: alert, red: red)),
            fanout AS (
                INSERT INTO fanouts (tenant_id, group_id, seq, author_id, red, alert)
                SELECT g.tenant_id, g.id, \(seq), \(author), \(red), \(alert)::jsonb FROM groups g
                WHERE g.id = \(group) AND NOT \(managersOnly) AND (SELECT devices FROM probe) > \(inlineDevices)
                RETURNING tenant_id, id),
            fanout_job AS (
                INSERT INTO fanout_jobs (fanout_id, tenant_id) SELECT id, tenant_id FROM fanout)
            SELECT count(*) AS queued FROM queued
            """, committing: committing && !red).rows[0].decode(Int.self, "queued")
        return queued + (red ? try enqueueDevicelessFallback(group: group, excluding: author, roles: roles, alert: alert, committing: committing,
                                                             on: connection) : 0)
    }

    /// The statement's `WITH` items that queue an alert's pushes to the devices of `members`
    /// (a query of `tenant_id, group_id, user_id`), named `members`, `targets`, `recipients`,
    /// `queued` and `jobs`: written once for the pushes queued with the alert and for a fanout's
    /// batches.
    static func alertPushes(members: SQLQuery, seq: Int64, alert: RawJSON, red: Bool) -> SQLQuery {
        """
        members AS (\(fragment: members)),
        targets AS (
            SELECT d.tenant_id, m.group_id, m.user_id, d.platform, d.token, g.name AS group_name,
                   round(roost_distance_m(u.home->'location', \(alert)::jsonb->'location')) AS distance, g.nearby_m
            FROM members m
            JOIN devices d ON d.tenant_id = m.tenant_id AND d.user_id = m.user_id
            JOIN groups g ON g.tenant_id = m.tenant_id AND g.id = m.group_id
            JOIN users u ON u.tenant_id = m.tenant_id AND u.id = m.user_id
            LEFT JOIN user_preferences p ON p.tenant_id = m.tenant_id AND p.user_id = m.user_id
            WHERE coalesce(CASE WHEN \(red) THEN p.push_red ELSE p.push_amber END, true)),
        recipients AS (
            INSERT INTO alert_recipients (tenant_id, group_id, seq, user_id)
            SELECT DISTINCT tenant_id, group_id, \(seq), user_id FROM targets
            ON CONFLICT DO NOTHING),
        queued AS (
            INSERT INTO outbox (tenant_id, channel, recipient, template, user_id, data)
            SELECT tenant_id, 'push', token, 'alert', user_id, jsonb_build_object('platform', platform, 'group_name', group_name, 'alert', \(alert),
                                                                   'distance_m', distance, 'critical', coalesce(distance <= nearby_m, false))
            FROM targets
            RETURNING id, tenant_id),
        jobs AS (
            INSERT INTO outbox_jobs (outbox_id, tenant_id) SELECT id, tenant_id FROM queued)
        """
    }

    /// Fanouts still to expand, oldest first, at most `limit` (no tenant needed: ids only).
    public func fanouts(limit: Int, on connection: PostgresConnection) throws -> [(id: UUID, tenant: UUID)] {
        try connection.query("SELECT fanout_id, tenant_id FROM fanout_jobs ORDER BY created_at LIMIT \(limit)").rows
            .map { (try $0.decode(UUID.self, "fanout_id"), try $0.decode(UUID.self, "tenant_id")) }
    }

    /// Queues the pushes of a fanout's next `members` members (inside its tenant's transaction)
    /// and moves its cursor past them, in one statement; once no member is left, the fanout and
    /// its job are removed. Returns how many pushes were queued and whether it is done.
    public func expandFanout(_ id: UUID, members batch: Int, on connection: PostgresConnection) throws -> (queued: Int, done: Bool) {
        guard let fanout = try connection.query("""
            SELECT f.group_id, f.seq, f.author_id, f.red, f.alert::text AS alert, j.after_user
            FROM fanouts f JOIN fanout_jobs j ON j.fanout_id = f.id WHERE f.id = \(id)
            FOR UPDATE OF j
            """).first else {
            try connection.query("DELETE FROM fanout_jobs WHERE fanout_id = \(id)")
            return (0, true)
        }
        let group = try fanout.decode(UUID.self, "group_id")
        let author = try fanout.decode(UUID?.self, "author_id")
        let after = try fanout.decode(UUID?.self, "after_user")
        let members: SQLQuery = """
            SELECT m.tenant_id, m.group_id, m.user_id FROM memberships m
            WHERE m.group_id = \(group) AND m.user_id IS DISTINCT FROM \(author) AND (\(after)::uuid IS NULL OR m.user_id > \(after))
            ORDER BY m.user_id LIMIT \(batch)
            """
        let row = try connection.query("""
            WITH \(fragment: Self.alertPushes(members: members, seq: try fanout.decode(Int64.self, "seq"),
                                              alert: RawJSON(try fanout.decode(String.self, "alert")), red: try fanout.decode(Bool.self, "red"))),
            moved AS (
                UPDATE fanout_jobs SET after_user = (SELECT user_id FROM members ORDER BY user_id DESC LIMIT 1) WHERE fanout_id = \(id) AND EXISTS (SELECT 1 FROM members))
            SELECT (SELECT count(*) FROM members) AS members, (SELECT count(*) FROM queued) AS queued
            """).rows[0]
        let done = try row.decode(Int.self, "members") < batch
        if done {
            try connection.query("DELETE FROM fanout_jobs WHERE fanout_id = \(id)")
            try connection.query("DELETE FROM fanouts WHERE id = \(id)")
        }
        return (try row.decode(Int.self, "queued"), done)
    }

    /// A red alert by email (else SMS) to every member but the author with no device at all and
    /// a verified address their fallback allows, as `fallbackTail` decides; how many were queued.
    /// Its own statement, run for red alerts only, so an amber alert's stays as small to plan.
    private func enqueueDevicelessFallback(group: UUID, excluding author: UUID?, roles: SQLQuery, alert: RawJSON, committing: Bool,
                                           on connection: PostgresConnection) throws -> Int {
        try connection.query("""
            WITH eligible AS (
                SELECT m.tenant_id, CASE WHEN f.email IS NOT NULL THEN 'email' ELSE 'sms' END AS channel, coalesce(f.email, f.phone) AS recipient,
                       m.user_id, jsonb_build_object('group_name', g.name, 'alert', \(alert)::jsonb, 'fallback', true) AS data
                FROM memberships m
                JOIN users u ON u.tenant_id = m.tenant_id AND u.id = m.user_id
                JOIN groups g ON g.tenant_id = m.tenant_id AND g.id = m.group_id
                LEFT JOIN user_preferences p ON p.tenant_id = m.tenant_id AND p.user_id = m.user_id
                CROSS JOIN LATERAL (SELECT CASE WHEN u.email_verified AND coalesce(p.fallback_email, true) THEN u.email END AS email,
                                           CASE WHEN u.phone_verified AND coalesce(p.fallback_sms, true) THEN u.phone END AS phone) f
                WHERE m.group_id = \(group) AND m.user_id IS DISTINCT FROM \(author) \(fragment: roles) AND u.deleted_at IS NULL
                  AND coalesce(f.email, f.phone) IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM devices d WHERE d.tenant_id = m.tenant_id AND d.user_id = m.user_id)),
            \(unsafeRaw: Self.fallbackTail)
            """, committing: committing).rows[0].decode(Int.self, "queued")
    }

    /// Whether any member of the group but the author asked for chat pushes, as a condition
    /// for the statement that opens a chat post's transaction to answer
    /// (`UserStore.sessionMemberQuery(..., asking:)`, where `author` is `UserStore.caller`):
    /// one indexed read (most groups have none), so a chat message costs no more unless
    /// someone wants them.
    public func chatPushesWanted(group: UUID, excluding author: SQLQuery) -> SQLQuery {
        chatPushesWanted(group: "\(group)", excluding: author)
    }

    /// The same, the group an SQL expression too.
    public func chatPushesWanted(group: SQLQuery, excluding author: SQLQuery) -> SQLQuery {
        """
        EXISTS (SELECT 1 FROM user_preferences p
                JOIN memberships pm ON pm.tenant_id = p.tenant_id AND pm.user_id = p.user_id AND pm.group_id = \(fragment: group)
                WHERE p.push_chat AND p.user_id <> \(fragment: author))
        """
    }

    /// The same question, asked in a statement of its own.
    public func chatPushesWanted(group: UUID, excluding author: UUID, on connection: PostgresConnection) throws -> Bool {
        try connection.query("SELECT \(fragment: chatPushesWanted(group: group, excluding: "\(author)")) AS wanted").rows[0]
            .decode(Bool.self, "wanted")
    }

    /// One `push` delivery (template `chat`) per device of every member of the group but the
    /// author who asked for chat pushes (off by default). Returns how many were queued.
    @discardableResult
    public func enqueueChatPushes(group: UUID, excluding author: UUID, message: RawJSON, on connection: PostgresConnection) throws -> Int {
        try connection.query("""
            WITH queued AS (
                INSERT INTO outbox (tenant_id, channel, recipient, template, user_id, data)
                SELECT d.tenant_id, 'push', d.token, 'chat', d.user_id,
                       jsonb_build_object('platform', d.platform, 'group_id', g.id, 'group_name', g.name, 'message', \(message)::jsonb)
                FROM user_preferences p
                JOIN memberships m ON m.tenant_id = p.tenant_id AND m.user_id = p.user_id AND m.group_id = \(group)
                JOIN devices d ON d.tenant_id = p.tenant_id AND d.user_id = p.user_id
                JOIN groups g ON g.tenant_id = m.tenant_id AND g.id = m.group_id
                WHERE p.push_chat AND p.user_id <> \(author)
                RETURNING id, tenant_id)
            INSERT INTO outbox_jobs (outbox_id, tenant_id) SELECT id, tenant_id FROM queued
            """).affectedRows
    }

    /// One `push` delivery with `template` per registered device of `user`: what an alert's
    /// author hears of the answers (unless they turned `responses` off). Returns how many were queued.
    @discardableResult
    public func enqueuePushes(to user: UUID, template: TemplateName, data: RawJSON, on connection: PostgresConnection) throws -> Int {
        try connection.query("""
            WITH queued AS (
                INSERT INTO outbox (tenant_id, channel, recipient, template, user_id, data)
                SELECT d.tenant_id, 'push', d.token, \(template), d.user_id, jsonb_build_object('platform', d.platform) || \(data)::jsonb
                FROM devices d WHERE d.user_id = \(user)
                  AND (\(template) <> \(TemplateName.alertResponse)
                       OR coalesce((SELECT push_responses FROM user_preferences p WHERE p.user_id = d.user_id), true))
                RETURNING id, tenant_id)
            INSERT INTO outbox_jobs (outbox_id, tenant_id) SELECT id, tenant_id FROM queued
            """).affectedRows
    }

    /// One `push` delivery with `template` per registered device of everyone the alert was
    /// pushed to who is still a member (the all clear, a reopened alert; with `unansweredOnly`,
    /// an escalation's re-push to those who have not answered it). Each carries `data` and the
    /// device's platform and, given `distanceTo` (the alert's JSON), the recipient's home's
    /// `distance_m` to the alert's place (null without either). Returns how many were queued.
    @discardableResult
    public func enqueueRecipientPushes(group: UUID, seq: Int64, template: TemplateName, data: RawJSON, unansweredOnly: Bool = false,
                                       distanceTo alert: RawJSON? = nil, on connection: PostgresConnection) throws -> Int {
        try connection.query("""
            WITH queued AS (
                INSERT INTO outbox (tenant_id, channel, recipient, template, user_id, data)
                SELECT d.tenant_id, 'push', d.token, \(template), d.user_id,
                       jsonb_build_object('platform', d.platform) || \(data)::jsonb
                       || CASE WHEN \(alert)::jsonb IS NULL THEN '{}'::jsonb
                               ELSE jsonb_build_object('distance_m', round(roost_distance_m(u.home->'location', \(alert)::jsonb->'location'))) END
                FROM alert_recipients r
                JOIN memberships m ON m.tenant_id = r.tenant_id AND m.group_id = r.group_id AND m.user_id = r.user_id
                JOIN devices d ON d.tenant_id = r.tenant_id AND d.user_id = r.user_id
                JOIN users u ON u.tenant_id = r.tenant_id AND u.id = r.user_id
                WHERE r.group_id = \(group) AND r.seq = \(seq)
                  AND (NOT \(unansweredOnly) OR NOT EXISTS (SELECT 1 FROM alert_acks k WHERE k.tenant_id = r.tenant_id AND k.group_id = r.group_id
                                                           AND k.seq = r.seq AND k.user_id = r.user_id))
                RETURNING id, tenant_id)
            INSERT INTO outbox_jobs (outbox_id, tenant_id) SELECT id, tenant_id FROM queued
            """).affectedRows
    }
}
