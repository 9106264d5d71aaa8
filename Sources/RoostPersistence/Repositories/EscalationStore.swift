import Foundation
import RoostProtocol

/// A claimed escalation: its job and the alert it is for.
public struct ClaimedEscalation: Sendable, Equatable {
    public let id: UUID
    public let tenant: UUID
    public let group: UUID
    public let seq: Int64
    /// When the alert (re)opened: level n is due n times the group's setting after it.
    public let since: Date
}

/// An alert as an escalation decides on it (`EscalationStore.alert`).
public struct EscalatingAlert: Sendable, Equatable {
    public let open: Bool
    public let red: Bool
    public let level: Int
    /// The group's `escalate_after_s` now (nil: escalation is off).
    public let escalateAfterSeconds: Int?
    /// Whether any member answers `on_my_way`.
    public let someoneIsComing: Bool

    public init(open: Bool, red: Bool, level: Int, escalateAfterSeconds: Int?, someoneIsComing: Bool) {
        self.open = open
        self.red = red
        self.level = level
        self.escalateAfterSeconds = escalateAfterSeconds
        self.someoneIsComing = someoneIsComing
    }
}

/// Escalations of red alerts and the group's escalation contacts (sql/0011). The job rows
/// (`alert_escalations`) hold ids and times only and are claimed across tenants; everything
/// else is read in the claimed alert's tenant.
public struct EscalationStore: Sendable {
    public init() {}

    /// Schedules a red alert's first escalation counting from now (a new alert, or one opened
    /// again, which starts over from level 0), when its group escalates at all; nothing for
    /// an alert that is not red.
    public func schedule(tenant: UUID, group: UUID, seq: Int64, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO alert_escalations (tenant_id, group_id, seq, since, due_at)
            SELECT \(tenant), \(group), \(seq), now(), now() + g.escalate_after_s * interval '1 second'
            FROM groups g JOIN alerts a ON a.tenant_id = g.tenant_id AND a.group_id = g.id
            WHERE g.id = \(group) AND a.seq = \(seq) AND a.severity = 'red' AND g.escalate_after_s IS NOT NULL
            ON CONFLICT (tenant_id, group_id, seq) DO UPDATE
                SET since = excluded.since, due_at = excluded.due_at, attempts = 0, last_error = NULL, parked_at = NULL
            """)
    }

    /// Escalations due at `now`, locked for this transaction and skipped by every other (every
    /// node runs the scheduler): each level fires once. Ids and times only, before any tenant.
    public func claimDue(at now: Date, limit: Int, tenant: UUID? = nil, on connection: PostgresConnection) throws -> [ClaimedEscalation] {
        try connection.query("""
            SELECT escalation_id, tenant_id, group_id, seq, since FROM alert_escalations
            WHERE due_at <= \(now) AND parked_at IS NULL AND (\(tenant)::uuid IS NULL OR tenant_id = \(tenant))
            ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
            """).rows.map {
            ClaimedEscalation(id: try $0.decode(UUID.self, "escalation_id"), tenant: try $0.decode(UUID.self, "tenant_id"),
                              group: try $0.decode(UUID.self, "group_id"), seq: try $0.decode(Int64.self, "seq"),
                              since: try $0.decode(Date.self, "since"))
        }
    }

    /// The alert of a claimed escalation, with its group's event counter and alert rows locked
    /// for the change, in the order every change takes them (counter, then alert); `.busy` when
    /// a member is changing the group right now (the scheduler never waits on a request, which
    /// waits on nothing the scheduler holds), nil when the alert is gone.
    public func alert(of escalation: ClaimedEscalation, on connection: PostgresConnection) throws -> Claim? {
        guard let group = try connection.query("""
            SELECT g.escalate_after_s FROM groups g JOIN group_seqs s ON s.tenant_id = g.tenant_id AND s.group_id = g.id
            WHERE g.id = \(escalation.group) FOR UPDATE OF s SKIP LOCKED
            """).first else {
            return try connection.query("SELECT 1 FROM groups WHERE id = \(escalation.group)").first == nil ? nil : .busy
        }
        return try connection.query("""
            SELECT a.status = 'open' AS open, a.severity = 'red' AS red, a.escalation_level,
                   EXISTS (SELECT 1 FROM alert_acks k WHERE k.tenant_id = a.tenant_id AND k.group_id = a.group_id AND k.seq = a.seq
                           AND k.response = 'on_my_way') AS coming
            FROM alerts a WHERE a.group_id = \(escalation.group) AND a.seq = \(escalation.seq) FOR UPDATE
            """).first.map {
            Claim.alert(EscalatingAlert(open: try $0.decode(Bool.self, "open"), red: try $0.decode(Bool.self, "red"),
                                   level: try $0.decode(Int.self, "escalation_level"),
                                   escalateAfterSeconds: try group.decode(Int?.self, "escalate_after_s"),
                                   someoneIsComing: try $0.decode(Bool.self, "coming")))
        }
    }

    public enum Claim: Sendable, Equatable {
        case alert(EscalatingAlert)
        case busy
    }

    public func setLevel(_ level: Int, group: UUID, seq: Int64, on connection: PostgresConnection) throws {
        try connection.query("UPDATE alerts SET escalation_level = \(level) WHERE group_id = \(group) AND seq = \(seq)")
    }

    /// The escalation's next level is due at `due`.
    public func reschedule(_ id: UUID, at due: Date, on connection: PostgresConnection) throws {
        try connection.query("UPDATE alert_escalations SET due_at = \(due) WHERE escalation_id = \(id)")
    }

    /// The alert will not escalate further (answered, closed, at the last level, or off).
    public func drop(_ id: UUID, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM alert_escalations WHERE escalation_id = \(id)")
    }
}
