import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol
import Synchronization

/// The deadlines every node watches: check-ins nobody checked in on, bridges that missed
/// two heartbeats in a row (`BridgeNotices.sweep`), red alerts nobody is coming to
/// (`AlertEscalations`), and live locations' coalesced points and idle ends (`LiveLocationJobs`). For check-ins, each round it
/// claims due deadlines one at a time (`FOR UPDATE SKIP LOCKED`, so nodes never take the same
/// one), and in that same transaction marks the check-in `missed` and posts a red alert by its
/// member (template `missed_checkin`, the note, the last location) with push deliveries to the
/// group's other members. A deadline that passed while every node was down fires on the first
/// round of the first node up.
///
/// Each deadline is a job of its own (`JobRunner`): one that fails is retried with backoff and
/// parked after a few tries, and never holds up another deadline, another tenant's, or the
/// bridge watch, which runs in the same round whatever the check-ins did.
final class DeadlineScheduler: Sendable {
    private let pool: ConnectionPool
    private let log: Log
    private let runner: JobRunner
    private let escalations: AlertEscalations
    private let liveLocations: LiveLocationJobs
    private let intervalMilliseconds: Int
    private let running = Mutex<Task<Void, Never>?>(nil)
    static let perRound = 100

    init(pool: ConnectionPool, log: Log, metrics: JobMetrics = JobMetrics(), maxAttempts: Int = 5, intervalMilliseconds: Int = 500) {
        self.pool = pool
        self.log = log
        var runner = JobRunner(metrics: metrics, log: log)
        runner.maxAttempts = maxAttempts
        self.runner = runner
        escalations = AlertEscalations(pool: pool, runner: runner)
        liveLocations = LiveLocationJobs(pool: pool, runner: runner)
        self.intervalMilliseconds = intervalMilliseconds
    }

    func start() {
        running.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in
                var nextSessionSweep = ContinuousClock.now
                while !Task.isCancelled {
                    await attempt("check-ins: a round failed; retrying") { try await runOnce() }
                    await attempt("bridges: a watch round failed; retrying") { try await BridgeNotices.sweep(pool: pool, runner: runner) }
                    await attempt("alerts: an escalation round failed; retrying") {
                        for alert in try await escalations.runOnce() {
                            log.info("alerts: escalated", ["group_id": alert.group.uuidString.lowercased(), "seq": String(alert.seq),
                                                           "level": String(alert.level)])
                        }
                    }
                    await attempt("live locations: a round failed; retrying") { try await liveLocations.runOnce() }
                    if ContinuousClock.now >= nextSessionSweep {
                        nextSessionSweep = ContinuousClock.now + .seconds(30)
                        await attempt("sessions: an expiry round failed; retrying") { try await Self.endExpiredSessions(pool: pool) }
                    }
                    try? await Task.sleep(for: .milliseconds(intervalMilliseconds))
                }
            }
        }
    }

    /// One round of one kind: its failure (the database away, say) is logged and the loop goes
    /// on with the other kinds, retrying this one next time.
    private func attempt(_ failure: String, _ round: () async throws -> Void) async {
        do {
            try await round()
        } catch {
            log.warning(failure, ["error": "\(error)"])
        }
    }

    func stop() async {
        let task = running.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        task?.cancel()
        await task?.value
    }

    /// One round: handles due deadlines until none is left (or `perRound`); returns how many alerts it raised.
    @discardableResult
    func runOnce() async throws -> Int {
        var raised = 0
        for _ in 0..<Self.perRound {
            let runner = self.runner
            let outcome = try await pool.withConnection { connection in try Self.handleOne(on: connection, runner: runner) }
            switch outcome {
            case .none: return raised
            case .raised(let checkin, let group, let seq):
                raised += 1
                log.info("check-ins: missed; alert raised", ["checkin_id": checkin.uuidString.lowercased(),
                                                            "group_id": group.uuidString.lowercased(), "seq": String(seq)])
            case .skipped, .failed: continue
            }
        }
        return raised
    }

    /// Ends expired sessions in the tenants where one may have expired (at most `tenants` of
    /// them a round, each in its own transaction), so their streams close (with 1008) on every
    /// node when a session runs out, not only when it is revoked; how many ended.
    @discardableResult
    static func endExpiredSessions(pool: ConnectionPool, tenants: Int = 100) async throws -> Int {
        let store = UserStore()
        var ended = 0
        for _ in 0..<tenants {
            let swept = try await pool.withConnection { connection in
                try connection.withTransaction { connection -> Int? in
                    guard let tenant = try store.claimSessionSweep(on: connection) else { return nil }
                    try connection.setTenant(tenant)
                    return try store.endExpiredSessions(tenant: tenant, limit: 1000, on: connection)
                }
            }
            guard let swept else { break }
            ended += swept
        }
        return ended
    }

    enum Outcome: Sendable {
        case none
        case skipped
        /// The job failed; `JobRunner` recorded it for a later retry.
        case failed
        case raised(checkin: UUID, group: UUID, seq: Int64)
    }

    static func handleOne(on connection: PostgresConnection, runner: JobRunner) throws -> Outcome {
        try connection.withTransaction { connection in
            guard let (id, tenant) = try CheckinStore().claimDue(limit: 1, on: connection).first else { return .none }
            try connection.setTenant(tenant)
            return try runner.run(.checkinDeadline, id: id, on: connection) { try fire(id, tenant: tenant, on: $0) } ?? .failed
        }
    }

    /// Marks a claimed, due check-in missed and raises its alert.
    private static func fire(_ id: UUID, tenant: UUID, on connection: PostgresConnection) throws -> Outcome {
        let store = CheckinStore()
        let checkin: Checkin
        switch try store.claimed(id, on: connection) {
        case .busy:
            return .skipped
        case .notDue(let exists, let active):
            if !exists || !active { try store.dropDeadline(id, on: connection) }
            return .skipped
        case .due(let found):
            checkin = found
        }
        // A member who has left the group since: the check-in ends without an alert there.
        guard try GroupStore().role(of: checkin.userID, in: checkin.groupID, on: connection) != nil else {
            _ = try store.end(id, status: "missed", on: connection)
            return .skipped
        }
        let name = try UserStore().find(id: checkin.userID, on: connection)?.displayName ?? UserStore.deletedName
        let text = checkin.note.isEmpty ? CheckinStore.missedText(name: name) : checkin.note
        let message = NewMessage(clientMessageID: nil, systemKey: "checkin:\(id.uuidString.lowercased())", text: text, kind: "alert", severity: "red",
                                 template: "missed_checkin", location: checkin.location, replyTo: nil)
        let posted = try MessageStore().post(tenant: tenant, group: checkin.groupID, authorType: "user", authorID: checkin.userID,
                                             authorName: name, message: message, on: connection)
        try OutboxStore().enqueueAlertPushes(group: checkin.groupID, seq: posted.seq, excluding: checkin.userID, alert: RawJSON(posted.json), on: connection)
        _ = try store.end(id, status: "missed", alertSeq: posted.seq, on: connection)
        return .raised(checkin: id, group: checkin.groupID, seq: posted.seq)
    }
}
