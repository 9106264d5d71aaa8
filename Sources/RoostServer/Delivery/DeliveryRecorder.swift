import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
import Synchronization

/// What became of one claim's deliveries, written back as they finish: every 50 ms (or at the
/// end) whatever finished meanwhile is written in one transaction per tenant, one statement per
/// kind of outcome (`OutboxStore.record`), so a thousand pushes cost a handful of statements,
/// and a delivery still waiting on a slow origin does not hold back the others' bookkeeping.
/// A batch that cannot be written is logged; its rows' leases run out and they are sent again.
final class DeliveryRecorder: Sendable {
    private struct Finished {
        let message: OutboxMessage
        let outcome: DeliveryOutcome
    }

    private let pool: ConnectionPool
    private let policy: DeliveryPolicy
    private let log: Log
    private let metrics: JobMetrics
    private let deliveries: DeliveryMetrics
    private let finished = Mutex<[Finished]>([])

    init(pool: ConnectionPool, policy: DeliveryPolicy, log: Log, metrics: JobMetrics, deliveries: DeliveryMetrics) {
        self.pool = pool
        self.policy = policy
        self.log = log
        self.metrics = metrics
        self.deliveries = deliveries
    }

    func add(_ delivery: Delivery, _ outcome: DeliveryOutcome) {
        deliveries.record(delivery.message, outcome: outcome)
        finished.withLock { $0.append(Finished(message: delivery.message, outcome: outcome)) }
    }

    /// A push held back by its member's quiet hours.
    func postpone(_ message: OutboxMessage, until: Date) {
        finished.withLock { $0.append(Finished(message: message, outcome: .deferred(until: until, "quiet hours"))) }
    }

    /// Flushes every 50 ms until cancelled.
    func flushPeriodically() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(50))
            await flush()
        }
    }

    /// Writes back what finished since the last flush (each row is taken by one flush only).
    func flush() async {
        let batch = finished.withLock { batch in
            defer { batch.removeAll(keepingCapacity: true) }
            return batch
        }
        for (tenant, rows) in Dictionary(grouping: batch, by: \.message.tenantID) {
            await write(rows, tenant: tenant)
        }
    }

    private func write(_ rows: [Finished], tenant: UUID) async {
        let policy = self.policy
        var records: [DeliveryRecord] = []
        var fallBack: Set<UUID> = []
        for row in rows {
            let attempt = row.message.attempts + 1
            let decision = policy.decide(row.outcome, attempt: attempt, redAlertPush: row.message.channel == .push && row.message.severity == "red")
            let step: DeliveryRecord.Step = switch decision.step {
            case .delivered: .delivered
            case .retry(let error): .retry(error: error, retryIn: policy.backoff.seconds(afterFailures: attempt))
            case .failForGood(let error): .failed(error: error)
            case .postpone(let until): .postponed(until: until)
            }
            records.append(DeliveryRecord(id: row.message.id, step: step, goneEndpoint: decision.removeDevice ? row.message.recipient : nil))
            if decision.fallBack { fallBack.insert(row.message.id) }
            if let error = row.outcome.error, !Self.isPostponed(decision.step) {
                metrics.recordFailure(.outbox, parked: decision.final)
                log.warning(decision.final ? "outbox: delivery failed for good" : "outbox: delivery failed; will retry", [
                    "outbox_id": row.message.id.lowercasedText, "attempt": String(attempt), "error": error,
                ])
            }
        }
        let (written, fallingBack) = (records, fallBack)
        do {
            try await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant) { connection in
                    let failed = try OutboxStore().record(written, maxAttempts: policy.maxAttempts, on: connection)
                    // A red alert that reached none of the member's devices goes by email or SMS.
                    for id in failed where fallingBack.contains(id) {
                        if try OutboxStore().enqueueFallback(afterFailed: id, on: connection) == .heldBack {
                            OutsideBudget.refused(.alertFallback, tenant: tenant)
                        }
                    }
                }
            }
        } catch {
            log.warning("outbox: writing back deliveries failed; their leases run out and they are sent again",
                        ["tenant_id": tenant.lowercasedText, "deliveries": String(rows.count), "error": "\(error)"])
        }
    }

    private static func isPostponed(_ step: DeliveryPolicy.Step) -> Bool {
        if case .postpone = step { return true }
        return false
    }
}
