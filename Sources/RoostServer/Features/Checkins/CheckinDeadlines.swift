import Foundation
import RoostPersistence
import RoostProtocol

extension ClaimedCheckin: ClaimedJob {}

/// The scheduler's check-in round: claims due check-in jobs (several nodes never take the same
/// one), asks `CheckinPolicy` what each is due for at the round's `now`, and does it in the
/// claim's transaction: the prompt (a critical `checkin_prompt` push to the walker's devices and
/// a notice to their streams), the missed check-in's red alert in the watching groups, the end
/// of a check-in whose alert nobody completed, the deletion of its locations a day after it
/// ended. A step whose time has not come reschedules the job. Each check-in is a job of its own
/// (`JobRunner`): one that fails is retried and parked alone.
struct CheckinDeadlines: Sendable {
    let pool: ConnectionPool
    let runner: JobRunner
    static let perBatch = 20

    /// What a round did to one check-in.
    enum Done: Sendable, Equatable {
        case prompted(UUID)
        /// Missed: the alerts raised (none when the walker left every watching group).
        case missed(UUID, alerts: [CheckinAlerts.Raised])
        case lapsed(UUID)
        case purged(UUID)
        /// Looked at too early (the walker moved since): due again later. Counted as done so a
        /// batch of these does not end the round; left out of what `runOnce` returns.
        case rescheduled
    }

    /// One round at `now`; with `tenant`, of that tenant's check-ins only (a test driving rounds
    /// at chosen times leaves the other tests' tenants alone).
    func runOnce(now: Date = Date(), tenant: UUID? = nil) async throws -> [Done] {
        try await runner.drain(.checkinDeadline, pool: pool, perBatch: Self.perBatch,
                               claim: { try CheckinStore().claimDue(at: now, limit: Self.perBatch, tenant: tenant, on: $0) },
                               handle: { job, connection in try handle(job, now: now, on: connection) })
            .filter { $0 != .rescheduled }
    }

    /// "Are you OK?": the walk moves to `prompting` at `at` (its deadline came, `due`, or the
    /// walker arrived with PINs set, `arrived`), a critical push and a notice ask the walker,
    /// and the alert goes out at `missAt` (`at` plus the grace when not given) unless answered.
    static func prompt(_ checkin: Checkin, at now: Date, missAt given: Date? = nil, reason: String, tenant: UUID,
                       on connection: PostgresConnection) throws {
        let missAt = given ?? now.addingTimeInterval(Double(checkin.graceSeconds))
        try CheckinStore().prompt(checkin.id, at: now, missAt: missAt, on: connection)
        let data = "{\"checkin_id\":\"\(checkin.id.lowercasedText)\",\"due_at\":\(JSONString.quote(APIJSON.time(checkin.dueAt))),"
            + "\"miss_at\":\(JSONString.quote(APIJSON.time(missAt))),\"note\":\(JSONString.quote(checkin.note)),\"reason\":\"\(reason)\"}"
        try OutboxStore().enqueuePushes(to: checkin.userID, template: .checkinPrompt,
                                        data: RawJSON("{\"critical\":true,\"checkin\":\(data)}"), on: connection)
        try GroupEventLog.notifyUser(tenant: tenant, user: checkin.userID, event: .checkinPrompt, data: data, on: connection)
    }

    private func handle(_ job: ClaimedCheckin, now: Date, on connection: PostgresConnection) throws -> Done? {
        let store = CheckinStore()
        let checkin: Checkin
        switch try store.claimed(job.id, on: connection) {
        case .busy: return nil  // its walker is changing it: still due, next round
        case .gone:
            try store.dropDeadline(job.id, on: connection)
            return nil
        case .found(let found): checkin = found
        }
        switch CheckinPolicy.step(CheckinPolicy.Clock(checkin), now: now) {
        case .wait(let until):
            try store.reschedule(checkin.id, at: until, on: connection)
            return .rescheduled
        case .prompt(let missAt):
            try Self.prompt(checkin, at: now, missAt: missAt, reason: "due", tenant: job.tenant, on: connection)
            return .prompted(checkin.id)
        case .miss:
            let name = try UserStore().find(id: checkin.userID, on: connection)?.displayName ?? UserStore.deletedName
            let text = checkin.note.isEmpty ? CheckinStore.missedText(name: name) : checkin.note
            let raised = try CheckinAlerts.raise(checkin, template: .missedCheckin, text: text, location: nil, name: name, tenant: job.tenant,
                                                 on: connection)
            try CheckinAlerts.tellContacts(checkin, reason: "missed", name: name, tenant: job.tenant, on: connection)
            try store.alerted(checkin.id, status: CheckinStatus.missed.rawValue, at: now,
                              lapseAt: now.addingTimeInterval(CheckinPolicy.alertLifetime), on: connection)
            return .missed(checkin.id, alerts: raised)
        case .lapse:
            _ = try store.end(checkin.id, status: nil, reason: "lapsed", purgeAfter: CheckinPolicy.retention, on: connection)
            return .lapsed(checkin.id)
        case .purge:
            try store.purgeLocations(checkin.id, on: connection)
            return .purged(checkin.id)
        }
    }
}
