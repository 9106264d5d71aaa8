import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol
import Synchronization

/// The deadlines every node watches: check-ins' prompts, alerts and ends (`CheckinDeadlines`),
/// bridges that missed two heartbeats in a row (`BridgeNotices.sweep`), red alerts nobody is
/// coming to (`AlertEscalations`), live locations' coalesced points and idle ends
/// (`LiveLocationJobs`), check-in requests nobody answered (`CheckinRequestExpiries`), password
/// reset requests (`PasswordResetJobs`), history past its group's retention (`RetentionJobs`),
/// uploads nobody linked (`MediaExpiries`), official warnings that expired (`FeedExpiries`), and sessions past their age. Every kind claims its due jobs with
/// `FOR UPDATE SKIP LOCKED`, so nodes never take the same one, and a deadline that passed while
/// every node was down fires on the first round of the first node up.
///
/// Each job is a job of its own (`JobRunner`): one that fails is retried with backoff and
/// parked after a few tries, and never holds up another job, another tenant's, or another
/// kind, which runs in the same round whatever the others did.
final class DeadlineScheduler: Sendable {
    private let pool: ConnectionPool
    private let log: Log
    /// A round kind failing again and again (the database away) is said once, then every 30 s.
    private let failures: FailureLog
    private let runner: JobRunner
    private let escalations: AlertEscalations
    private let liveLocations: LiveLocationJobs
    private let checkins: CheckinDeadlines
    private let requests: CheckinRequestExpiries
    private let resets: PasswordResetJobs
    private let retention: RetentionJobs
    private let media: MediaExpiries
    private let warnings: FeedExpiries
    private let intervalMilliseconds: Int
    private let running = BackgroundTask()
    static let perRound = 100

    /// `baseBackoffSeconds`: how long a failed job waits before its first retry (doubling after).
    init(pool: ConnectionPool, log: Log, metrics: JobMetrics = JobMetrics(), maxAttempts: Int = 5, intervalMilliseconds: Int = 500,
         baseBackoffSeconds: Double = 1) {
        self.pool = pool
        self.log = log
        failures = FailureLog(log: log)
        var runner = JobRunner(metrics: metrics, log: log)
        runner.maxAttempts = maxAttempts
        runner.baseBackoffSeconds = baseBackoffSeconds
        self.runner = runner
        escalations = AlertEscalations(pool: pool, runner: runner)
        liveLocations = LiveLocationJobs(pool: pool, runner: runner)
        checkins = CheckinDeadlines(pool: pool, runner: runner)
        requests = CheckinRequestExpiries(pool: pool, runner: runner)
        resets = PasswordResetJobs(pool: pool, runner: runner)
        retention = RetentionJobs(pool: pool, runner: runner)
        media = MediaExpiries(pool: pool, runner: runner)
        warnings = FeedExpiries(pool: pool, runner: runner)
        self.intervalMilliseconds = intervalMilliseconds
    }

    func start() {
        running.start { [self] in
            var nextSessionSweep = ContinuousClock.now
            while !Task.isCancelled {
                await attempt("check-ins: a round failed; retrying") { try await runOnce() }
                await attempt("bridges: a watch round failed; retrying") { try await BridgeNotices.sweep(pool: pool, runner: runner) }
                await attempt("alerts: an escalation round failed; retrying") {
                    for alert in try await escalations.runOnce() {
                        DeliveryBell.shared.ring()
                        log.info("alerts: escalated", ["group_id": alert.group.lowercasedText, "seq": String(alert.seq),
                                                       "level": String(alert.level)])
                    }
                }
                await attempt("live locations: a round failed; retrying") { try await liveLocations.runOnce() }
                await attempt("check-in requests: an expiry round failed; retrying") { _ = try await requests.runOnce() }
                await attempt("password resets: a round failed; retrying") { try await resets.runOnce() }
                await attempt("retention: a purge round failed; retrying") {
                    for purge in try await retention.runOnce() where purge.deleted > 0 {
                        log.info("retention: purged", ["group_id": purge.group.lowercasedText, "events": String(purge.deleted),
                                                       "oldest_seq": String(purge.oldestSeq)])
                    }
                }
                await attempt("media: an expiry round failed; retrying") { try await media.runOnce() }
                await attempt("feeds: an expiry round failed; retrying") { try await warnings.runOnce() }
                if ContinuousClock.now >= nextSessionSweep {
                    nextSessionSweep = ContinuousClock.now + .seconds(30)
                    await attempt("sessions: an expiry round failed; retrying") { try await Self.endExpiredSessions(pool: pool) }
                    await attempt("throttles: a sweep failed; retrying") {
                        _ = try await pool.withConnection { try RateLimitStore().sweep(on: $0) }
                    }
                }
                try? await Task.sleep(for: .milliseconds(intervalMilliseconds))
            }
        }
    }

    /// One round of one kind: its failure (the database away, say) is logged and the loop goes
    /// on with the other kinds, retrying this one next time.
    private func attempt(_ failure: String, _ round: () async throws -> Void) async {
        do {
            try await round()
            failures.succeeded(failure)
        } catch {
            failures.failed(failure, ["error": "\(error)"])
        }
    }

    func stop() async {
        await running.stop()
    }

    /// One check-in round (`CheckinDeadlines`) at `now`: how many check-ins it found missed.
    @discardableResult
    func runOnce(now: Date = Date()) async throws -> Int {
        var missed = 0
        for done in try await checkins.runOnce(now: now) {
            switch done {
            case .prompted(let id):
                DeliveryBell.shared.ring()
                log.info("check-ins: prompted", ["checkin_id": id.lowercasedText])
            case .missed(let id, let alerts):
                DeliveryBell.shared.ring()
                missed += 1
                log.info("check-ins: missed; alerts raised", ["checkin_id": id.lowercasedText,
                                                             "alerts": alerts.map { "\($0.group.lowercasedText)/\($0.seq)" }.joined(separator: " ")])
            case .lapsed, .purged, .rescheduled:
                continue
            }
        }
        return missed
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
}
