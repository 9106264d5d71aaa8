import Foundation
import RoostPersistence
import RoostProtocol

/// The scheduler's retention round: each due group's purge is a job of its own (`JobRunner`),
/// at most `batch` seqs a round, so a group with years of history is purged over several rounds
/// and never holds a transaction, the group's row, or the scheduler's other kinds for long.
struct RetentionJobs: Sendable {
    let pool: ConnectionPool
    let runner: JobRunner
    var batch = 1000
    /// A group is purged at most this often once caught up, so a busy group is not visited for
    /// every message that comes of age: history lives up to this much past its retention.
    var granularitySeconds = 3600
    static let perBatch = 4

    /// One round; with `tenant`, of that tenant's groups only. The purges it made.
    @discardableResult
    func runOnce(tenant: UUID? = nil) async throws -> [RetentionPurge] {
        let (batch, granularity) = (batch, granularitySeconds)
        return try await runner.drain(.retention, pool: pool, perBatch: Self.perBatch,
                                      claim: { try JobStore().claimDue(.retention, limit: Self.perBatch, tenant: tenant, on: $0) },
                                      handle: { job, connection in
                                          try RetentionStore().purge(group: job.id, batch: batch, granularity: granularity, on: connection)
                                      })
    }
}
