import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// When an open red alert escalates (API.md "Incidents"): level n is due n times the group's
/// `escalate_after_s` after the alert opened, up to level 3; nothing escalates once a member
/// answers `on_my_way`, once it is closed, or while the group has escalation off. A pure
/// function of the alert and the time, so its timing is tested without waiting.
enum EscalationPolicy {
    static let maxLevel = 3

    enum Decision: Equatable {
        /// Never again (until the alert is opened again): drop the job.
        case stop
        /// Not due yet (the group's setting grew): look again then.
        case wait(until: Date)
        /// Go from `from` to `to` (more than one level when the nodes were down meanwhile:
        /// the levels passed are done at once, each level's event is `to`'s), then look again
        /// at `next` (nil at the last level).
        case escalate(from: Int, to: Int, next: Date?)
    }

    static func decide(_ alert: EscalatingAlert, since: Date, now: Date) -> Decision {
        guard alert.open, alert.red, !alert.someoneIsComing, let after = alert.escalateAfterSeconds, after > 0, alert.level < maxLevel else {
            return .stop
        }
        let elapsed = now.timeIntervalSince(since)
        let reached = min(maxLevel, Int((elapsed / Double(after)).rounded(.down)))
        func due(_ level: Int) -> Date { since.addingTimeInterval(Double(level * after)) }
        guard reached > alert.level else { return .wait(until: due(alert.level + 1)) }
        return .escalate(from: alert.level, to: reached, next: reached < maxLevel ? due(reached + 1) : nil)
    }

    /// What going from level `from` to `to` does: levels 1 and 3 push the alert again, marked
    /// critical, to the members it reached who have not answered; levels 2 and 3 send it to the
    /// group's confirmed escalation contacts by email or SMS.
    static func reaches(from: Int, to: Int) -> (members: Bool, contacts: Bool) {
        let passed = (from + 1)...max(from + 1, to)
        return (passed.contains(1) || passed.contains(3), passed.contains(2) || passed.contains(3))
    }
}

/// The scheduler's escalation round: claims due escalations (several nodes never take the same
/// one), decides on each with `EscalationPolicy` at the round's `now`, and escalates in the
/// claim's transaction: the level on the alert, the `alert.escalated` event, the pushes and
/// the contacts' messages. Each escalation is a job of its own (`JobRunner`).
struct AlertEscalations: Sendable {
    let pool: ConnectionPool
    let runner: JobRunner
    static let perBatch = 20
    /// Critical re-pushes of one alert in an hour (a level is once per opening; an alert
    /// closed and reopened over and over starts over each time).
    static let memberPushesPerAlertPerHour = 4
    /// Messages to one escalation contact in an hour and in a day, whatever the alerts.
    static let contactMessagesPerHour = 3
    static let contactMessagesPerDay = 10

    /// One alert that escalated in a round.
    struct Escalated: Sendable, Equatable {
        let group: UUID
        let seq: Int64
        let level: Int
    }

    /// Handles every escalation due at `now`; the alerts that escalated.
    @discardableResult
    /// One round at `now`; with `tenant`, of that tenant's escalations only (a test driving
    /// rounds at chosen times leaves the other tests' tenants alone).
    func runOnce(now: Date = Date(), tenant: UUID? = nil) async throws -> [Escalated] {
        try await runner.drain(.alertEscalation, pool: pool, perBatch: Self.perBatch,
                               claim: { try EscalationStore().claimDue(at: now, limit: Self.perBatch, tenant: tenant, on: $0) },
                               handle: { escalation, connection in
                                   try handle(escalation, now: now, on: connection).map { Escalated(group: escalation.group, seq: escalation.seq, level: $0) }
                               })
    }

    /// Decides on one claimed escalation and carries it out; the level reached, or nil.
    private func handle(_ escalation: ClaimedEscalation, now: Date, on connection: PostgresConnection) throws -> Int? {
        let store = EscalationStore()
        guard let claim = try store.alert(of: escalation, on: connection) else {
            try store.drop(escalation.id, on: connection)
            return nil
        }
        guard case .alert(let alert) = claim else { return nil }  // busy: still due, next round
        switch EscalationPolicy.decide(alert, since: escalation.since, now: now) {
        case .stop:
            try store.drop(escalation.id, on: connection)
            return nil
        case .wait(let until):
            try store.reschedule(escalation.id, at: until, on: connection)
            return nil
        case .escalate(let from, let to, let next):
            try escalate(escalation, from: from, to: to, on: connection)
            if let next { try store.reschedule(escalation.id, at: next, on: connection) } else { try store.drop(escalation.id, on: connection) }
            return to
        }
    }

    private func escalate(_ escalation: ClaimedEscalation, from: Int, to level: Int, on connection: PostgresConnection) throws {
        let (tenant, group, seq) = (escalation.tenant, escalation.group, escalation.seq)
        try EscalationStore().setLevel(level, group: group, seq: seq, on: connection)
        try GroupEventLog().append(tenant: tenant, group: group, event: .alertEscalated, actorType: .system, actorID: nil,
                                   data: RawJSON("{\"seq\":\(seq),\"level\":\(level)}"),
                                   hiddenFrom: try MessageStore().hiddenFrom(group: group, seq: seq, on: connection), on: connection)
        let alert = try MessageStore().message(group: group, seq: seq, on: connection)!
        let groupName = try GroupStore().group(id: group, on: connection)?.name ?? ""
        let reaches = EscalationPolicy.reaches(from: from, to: level)
        if reaches.members,
           try AlertPushes.allowed(RateLimit(RateLimitKey(.escalationPush, tenant.uuidString, group.uuidString, seq), limit: Self.memberPushesPerAlertPerHour, window: Throttle.hour), on: connection) {
            // The critical re-push (template `alert`) to every member pushed the alert who has not answered it.
            let data = "{\"group_name\":\(JSONString.quote(groupName)),\"alert\":\(alert),\"critical\":true,\"escalation_level\":\(level)}"
            try OutboxStore().enqueueRecipientPushes(group: group, seq: seq, template: .alert, data: RawJSON(data), unansweredOnly: true,
                                                     distanceTo: RawJSON(alert), on: connection)
        }
        // An official warning reaches the members it was pushed to, never the group's outside
        // contacts: a flood warning is no emergency in a neighbour's house.
        if reaches.contacts, try MessageStore().authorType(group: group, seq: seq, on: connection) != .feed {
            for contact in try OutsideContactStore.escalation.confirmed(owner: group, on: connection) {
                let (hour, day) = (RateLimitKey(.escalationContact, tenant.uuidString, contact.id.uuidString, "hour"),
                                   RateLimitKey(.escalationContact, tenant.uuidString, contact.id.uuidString, "day"))
                guard try AlertPushes.allowed(RateLimit(hour, limit: Self.contactMessagesPerHour, window: Throttle.hour),
                                              RateLimit(day, limit: Self.contactMessagesPerDay, window: Throttle.day), on: connection)
                else { continue }
                let data = "{\"contact_name\":\(JSONString.quote(contact.name)),\"group_name\":\(JSONString.quote(groupName)),"
                    + "\"level\":\(level),\"alert\":\(alert)}"
                try OutboxStore().enqueue(tenant: tenant, email: contact.email, phone: contact.phone, template: .alertEscalated,
                                          data: RawJSON(data), on: connection)
            }
        }
    }
}
