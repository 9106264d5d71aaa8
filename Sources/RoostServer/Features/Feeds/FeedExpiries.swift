import Foundation
import RoostPersistence
import RoostProtocol

/// Closes an official warning's alert when the warning expires (its `expires`, as its last
/// Update set it), by the feed it came from. Each expiry is a job of its own (`JobRunner`).
struct FeedExpiries: Sendable {
    let pool: ConnectionPool
    let runner: JobRunner
    static let perBatch = 50

    /// One round; with `tenant`, of that tenant's only. How many alerts closed.
    @discardableResult
    func runOnce(tenant: UUID? = nil) async throws -> Int {
        try await runner.drain(.capExpiry, pool: pool, perBatch: Self.perBatch,
                               claim: { try JobStore().claimDue(.capExpiry, limit: Self.perBatch, tenant: tenant, on: $0) },
                               handle: { job, connection -> Bool? in try expire(job, on: connection) ? true : nil }).count
    }

    private func expire(_ job: ClaimedJobRow, on connection: PostgresConnection) throws -> Bool {
        let store = FeedStore()
        defer { _ = try? store.dropExpiry(job.id, on: connection) }
        guard let (group, seq) = try store.expiring(job.id, on: connection),
              let alert = try MessageStore().alertState(group: group, seq: seq, on: connection),
              alert.status == AlertStatus.open.name, let feed = alert.authorID else { return false }
        _ = try AlertStatusChange.apply(closed: true, tenant: job.tenant, group: group, seq: seq, by: (.feed, feed),
                                        resolution: "The warning expired", on: connection)
        return true
    }
}
