import Dispatch
import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol
import Synchronization

/// Delivers the outbox (API.md "Outbound delivery"): claims due jobs (SKIP LOCKED, with a
/// lease, so any number of nodes deliver each row once), delivers through `log` (one JSON line
/// on stdout) or `webhook` (POST, any 2xx is delivered), and retries failures with exponential
/// backoff and full jitter until `maxAttempts`, then marks the row `failed`.
///
/// Fair and bounded: a claim takes at most `perTenant` jobs of each tenant, tenants with the
/// longest-waiting job first, so one tenant's flood of invitations does not hold up another's
/// verification code; at most `concurrency` deliveries run at once. A row whose handling
/// throws is counted as a failed attempt like any other and never stops the batch.
public final class OutboxWorker: Sendable {
    public enum Mode: Sendable {
        case log
        case webhook(url: URL, secret: String?)
    }

    public struct Options: Sendable {
        public var maxAttempts = 6
        /// The first retry waits about this long; each next one twice as long (capped at an hour).
        public var baseBackoffSeconds = 2.0
        public var pollIntervalMilliseconds = 500
        public var batchSize = 16
        /// Jobs of one tenant in one claim.
        public var perTenant = 4
        /// Deliveries in flight at once on this node.
        public var concurrency = 8
        public var leaseSeconds = 60
        public var webhookTimeoutSeconds = 10
        public init() {}
    }

    private let pool: ConnectionPool
    private let mode: Mode
    private let options: Options
    private let log: Log
    private let metrics: JobMetrics
    private let running = Mutex<Task<Void, Never>?>(nil)
    /// Webhook calls block: they run here, at most `concurrency` at once.
    private let deliveryQueue = DispatchQueue(label: "roost.outbox.delivery", attributes: .concurrent)
    /// Log-mode lines are written whole, one at a time.
    private let stdout = Mutex(())

    public init(pool: ConnectionPool, mode: Mode, options: Options = Options(), log: Log, metrics: JobMetrics = JobMetrics()) {
        self.pool = pool
        self.mode = mode
        self.options = options
        self.log = log
        self.metrics = metrics
    }

    public func start() {
        running.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in await loop() }
        }
    }

    /// Stops after the delivery in progress, if any.
    public func stop() async {
        let task = running.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        task?.cancel()
        await task?.value
    }

    private func loop() async {
        while !Task.isCancelled {
            let delivered: Int
            do {
                delivered = try await runOnce()
            } catch {
                log.warning("outbox: a round failed; retrying", ["error": "\(error)"])
                delivered = 0
            }
            if delivered == 0 {
                try? await Task.sleep(for: .milliseconds(options.pollIntervalMilliseconds))  // throws only when stopping
            }
        }
    }

    /// One round: claims due jobs and delivers them, `concurrency` at a time; returns how many
    /// were attempted.
    @discardableResult
    public func runOnce() async throws -> Int {
        let (limit, perTenant, lease) = (options.batchSize, options.perTenant, options.leaseSeconds)
        let jobs = try await pool.withConnection { try OutboxStore().claim(limit: limit, perTenant: perTenant, lease: lease, on: $0) }
        let width = max(1, options.concurrency)
        await withTaskGroup(of: Void.self) { group in
            for (index, job) in jobs.enumerated() {
                if index >= width { await group.next() }
                group.addTask { await self.deliverIsolated(job.id, tenant: job.tenant) }
            }
        }
        return jobs.count
    }

    /// Delivers one job; whatever throws is this job's failed attempt, never the batch's.
    private func deliverIsolated(_ id: UUID, tenant: UUID) async {
        do {
            try await deliver(id, tenant: tenant)
        } catch {
            metrics.recordFailure(.outbox, parked: false)
            log.warning("outbox: handling a delivery failed; its lease runs out and it is tried again",
                        ["outbox_id": id.uuidString.lowercased(), "error": "\(error)"])
            // Counted as an attempt where the database allows it, so a row that always throws
            // ends `failed` after its attempts like one that is always refused.
            let (maxAttempts, base) = (options.maxAttempts, options.baseBackoffSeconds)
            _ = try? await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant) { connection in
                    try OutboxStore().markFailed(id, error: "\(error)", backoff: { min(3600, base * pow(2, Double($0))) },
                                                 maxAttempts: maxAttempts, on: connection)
                }
            }
        }
    }

    private func deliver(_ id: UUID, tenant: UUID) async throws {
        let loaded = try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant) { connection -> (OutboxMessage, String)? in
                guard let message = try OutboxStore().message(id, on: connection) else {
                    try OutboxStore().dropJob(id, on: connection)
                    return nil
                }
                let slug = try TenantStore().find(id: tenant, on: connection)?.slug ?? ""
                return (message, slug)
            }
        }
        guard let (message, slug) = loaded else { return }
        let payload = Self.payload(message, tenantSlug: slug)
        let outcome = await attempt(payload)
        let attempts = message.attempts + 1
        let final = attempts >= options.maxAttempts
        let (maxAttempts, base) = (options.maxAttempts, options.baseBackoffSeconds)
        try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant) { connection in
                switch outcome {
                case .success: try OutboxStore().markDelivered(id, on: connection)
                case .failure(let error):
                    try OutboxStore().markFailed(id, error: "\(error)", backoff: { min(3600, base * pow(2, Double($0))) * Double.random(in: 0.5...1.0) },
                                                 maxAttempts: maxAttempts, on: connection)
                }
            }
        }
        if case .failure(let error) = outcome {
            metrics.recordFailure(.outbox, parked: final)
            log.warning(final ? "outbox: delivery failed for good" : "outbox: delivery failed; will retry", [
                "outbox_id": id.uuidString.lowercased(), "attempt": String(attempts), "error": "\(error)",
            ])
        }
    }

    /// Delivers one payload on the worker's own thread (webhook calls block).
    private func attempt(_ payload: [UInt8]) async -> Result<Void, WebhookClient.Failure> {
        let mode = self.mode
        let timeout = options.webhookTimeoutSeconds
        return await withCheckedContinuation { continuation in
            deliveryQueue.async {
                switch mode {
                case .log:
                    self.stdout.withLock { _ in FileHandle.standardOutput.write(Data(payload + [10])) }
                    continuation.resume(returning: .success(()))
                case .webhook(let url, let secret):
                    do {
                        let status = try WebhookClient(url: url, secret: secret, timeoutSeconds: timeout).post(payload)
                        continuation.resume(returning: (200..<300).contains(status)
                            ? .success(()) : .failure(.init(description: "webhook answered \(status)")))
                    } catch let error as WebhookClient.Failure {
                        continuation.resume(returning: .failure(error))
                    } catch {
                        continuation.resume(returning: .failure(.init(description: "\(error)")))
                    }
                }
            }
        }
    }

    /// `{"id", "channel", "to", "template", "tenant", "data"}` (API.md "Outbound delivery").
    static func payload(_ message: OutboxMessage, tenantSlug: String) -> [UInt8] {
        let text = "{\"id\":\"\(message.id.uuidString.lowercased())\",\"channel\":\(JSONString.quote(message.channel)),"
            + "\"to\":\(JSONString.quote(message.recipient)),\"template\":\(JSONString.quote(message.template)),"
            + "\"tenant\":\(JSONString.quote(tenantSlug)),\"data\":\(message.data)}"
        return Array(text.utf8)
    }
}
