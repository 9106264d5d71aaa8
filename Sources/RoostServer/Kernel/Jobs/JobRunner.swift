import Foundation
import RoostProtocol
import RoostHTTP
import RoostPersistence
import Synchronization

/// Failure counters of the background jobs, for `/metrics` (`roost_job_failures_total{kind}`
/// and `roost_jobs_parked_total{kind}`).
public final class JobMetrics: Sendable {
    private let counts = Mutex<[String: (failures: Int, parked: Int)]>([:])

    public init() {}

    func recordFailure(_ kind: JobKind, parked: Bool) {
        counts.withLock { counts in
            var entry = counts[kind.name] ?? (0, 0)
            entry.failures += 1
            if parked { entry.parked += 1 }
            counts[kind.name] = entry
        }
    }

    public func failures(_ kind: JobKind) -> Int { counts.withLock { $0[kind.name]?.failures ?? 0 } }

    /// The counters in Prometheus text format; every kind appears, at zero before any failure.
    public func render() -> String {
        let snapshot = counts.withLock { $0 }
        let kinds = JobKind.all.map(\.name)
        var out = "# HELP roost_job_failures_total Background job attempts that failed (each is retried with backoff), by kind.\n"
            + "# TYPE roost_job_failures_total counter\n"
        for kind in kinds { out += "roost_job_failures_total{kind=\"\(kind)\"} \(snapshot[kind]?.failures ?? 0)\n" }
        out += "# HELP roost_jobs_parked_total Background jobs parked after too many failures (roost jobs list --failed), by kind.\n"
            + "# TYPE roost_jobs_parked_total counter\n"
        for kind in kinds { out += "roost_jobs_parked_total{kind=\"\(kind)\"} \(snapshot[kind]?.parked ?? 0)\n" }
        return out
    }
}

/// Runs one claimed job so that its failure is its own: the work runs in a savepoint of the
/// claiming transaction; when it throws, the work is undone, the failure is recorded on the
/// job's row (retried after a backoff, parked after `maxAttempts`), counted and logged with
/// the job's id, and the transaction commits, so the next claim moves on to other jobs.
struct JobRunner: Sendable {
    let metrics: JobMetrics
    let log: Log
    var maxAttempts = 5
    /// The first retry waits this long, each next one twice as long, up to `maxBackoffSeconds`.
    var baseBackoffSeconds = 1.0
    var maxBackoffSeconds = 300.0

    /// `body`'s result, or nil when it failed (and the failure was recorded).
    func run<Result>(_ kind: JobKind, id: UUID, on connection: PostgresConnection,
                     _ body: (PostgresConnection) throws -> Result) throws -> Result? {
        do {
            return try connection.withSavepoint(body)
        } catch let error as DatabaseError where connection.isBroken || error.code == .connectionLost || error.code == .unreachable || error.code == .unavailable {
            throw error  // the database is away, not this job at fault: the round fails and retries
        } catch {
            let (base, cap) = (baseBackoffSeconds, maxBackoffSeconds)
            // The job tables have no row security, so what they keep of an error leaves out a
            // database error's detail (it may quote a row's values).
            let recorded = (error as? DatabaseError).map { "\($0.message) [\($0.code)]" + ($0.constraint.map { " constraint: \($0)" } ?? "") }
                ?? "\(error)"
            let attempts = try JobStore().recordFailure(kind, id: id, error: recorded, maxAttempts: maxAttempts,
                                                        backoff: { Backoff(base: base, cap: cap).seconds(afterFailures: $0) }, on: connection)
            metrics.recordFailure(kind, parked: attempts.parked)
            let fields = ["kind": kind.name, "job_id": id.lowercasedText, "attempt": String(attempts.attempts), "error": "\(error)"]
            if attempts.parked {
                log.error("jobs: a job failed \(attempts.attempts) times and is parked; see roost jobs list --failed", fields)
            } else {
                log.warning("jobs: a job failed; retrying after \(Int(attempts.retryIn)) s", fields)
            }
            return nil
        }
    }
}

/// A job a scheduler round claimed across tenants: which row, and whose.
protocol ClaimedJob: Sendable {
    var id: UUID { get }
    var tenant: UUID { get }
}

extension ClaimedEscalation: ClaimedJob {}
extension ClaimedJobRow: ClaimedJob {}
extension ClaimedLiveLocation: ClaimedJob {}

extension JobRunner {
    /// Handles every job `claim` finds, `perBatch` at a time, each batch in one transaction:
    /// each job runs in its tenant and through `run` (its failure is its own), and what
    /// `handle` reports is collected. A batch that came back short, or did nothing (every job
    /// busy), ends the round; what is left waits for the next.
    func drain<Job: ClaimedJob, Done: Sendable>(
        _ kind: JobKind, pool: ConnectionPool, perBatch: Int,
        claim: @escaping @Sendable (PostgresConnection) throws -> [Job],
        handle: @escaping @Sendable (Job, PostgresConnection) throws -> Done?
    ) async throws -> [Done] {
        var all: [Done] = []
        while true {
            let (claimed, done) = try await pool.withConnection { [self] connection in
                try connection.withTransaction { connection -> (Int, [Done]) in
                    let jobs = try claim(connection)
                    var done: [Done] = []
                    for job in jobs {
                        try connection.setTenant(job.tenant)
                        if let result = try run(kind, id: job.id, on: connection, { try handle(job, $0) }) ?? nil { done.append(result) }
                    }
                    return (jobs.count, done)
                }
            }
            all += done
            if claimed < perBatch || done.isEmpty { return all }
        }
    }
}
