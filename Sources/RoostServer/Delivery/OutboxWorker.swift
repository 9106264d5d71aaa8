import Dispatch
import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol
import Synchronization

/// Delivers the outbox (API.md "Outbound delivery"): claims due jobs (SKIP LOCKED, with a
/// lease, so any number of nodes deliver each row once), sends each through its channel (a
/// `DeliveryChannel`: one JSON line on stdout, the webhook, SMTP, or Web Push), and does what
/// the `DeliveryPolicy` decides of the outcome: retry with backoff and jitter until
/// `maxAttempts`, then mark the row `failed`; fail it at once when no retry changes it (an SMTP
/// 5xx), remove a device that is gone, offer a red alert's fallback.
///
/// Fair and bounded: a claim takes at most `perTenant` jobs of each tenant, tenants with the
/// longest-waiting job first, so one tenant's flood of invitations does not hold up another's
/// verification code; at most `concurrency` deliveries run at once. A row whose handling
/// throws is counted as a failed attempt like any other and never stops the batch.
public final class OutboxWorker: Sendable {
    /// One route for every channel: what the tests and `ROOST_DELIVERY` alone choose.
    public enum Mode: Sendable {
        case log
        case webhook(url: URL, secret: String?)
    }

    /// Where each channel's deliveries go (`ROOST_EMAIL`, `ROOST_SMS`, `ROOST_PUSH`).
    public struct Channels: Sendable {
        public enum Route: String, Sendable, CaseIterable {
            case log, webhook, smtp, webpush
        }

        public var email = Route.log
        public var sms = Route.log
        /// `webpush` sends Web Push devices directly; other platforms then go to the webhook
        /// when one is set, or to the log.
        public var push = Route.log
        var webhook: (url: OutboundURL, secret: String?)?
        var smtp: SMTPSettings?
        /// With `push == .webpush`: the allow-list, the VAPID key and contact.
        var webPush: PushSettings?
        var tls: TLSClientContext?
        /// The outbound policy and resolver every delivery connects through.
        public var network = OutboundNetwork()
        var messages = RenderedMessages()

        public init() {}

        init(_ mode: Mode) {
            if case .webhook(let url, let secret) = mode {
                (email, sms, push) = (.webhook, .webhook, .webhook)
                // A URL the policy refuses leaves no webhook: its deliveries wait and say so.
                webhook = (try? network.policy.url(url.absoluteString, from: .operator, schemes: ["http", "https"])).map { ($0, secret) }
            }
        }

        /// The channel a row goes out through.
        func channel(for message: OutboxMessage, timeoutSeconds: Int, write: @escaping @Sendable ([UInt8]) -> Void) -> any DeliveryChannel {
            switch route(message) {
            case .log: LogChannel(write: write)
            case .webhook: WebhookChannel(webhook: webhook, network: network, tls: tls, timeoutSeconds: timeoutSeconds)
            case .smtp: SMTPChannel(settings: smtp, messages: messages, network: network, tls: tls, timeoutSeconds: timeoutSeconds)
            case .webpush: WebPushChannel(settings: webPush, messages: messages, tls: tls, timeoutSeconds: timeoutSeconds)
            }
        }

        func route(_ message: OutboxMessage) -> Route {
            switch message.channel {
            case .email: return email
            case .sms: return sms
            default:
                guard push == .webpush else { return push }
                return message.platform == "webpush" ? .webpush : (webhook != nil ? .webhook : .log)
            }
        }
    }

    /// What a delivery needs besides its row: its tenant, and for a Web Push device its
    /// subscription and the key to sign with.
    struct Context: Sendable {
        let tenant: Tenant?
        var subscription: WebPushSubscription?
        var vapid: P256Key?
    }

    /// The retry policy of these options.
    var policy: DeliveryPolicy {
        DeliveryPolicy(maxAttempts: options.maxAttempts, backoff: Backoff(base: options.baseBackoffSeconds, cap: 3600, jitter: 0.5...1.0))
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
        /// The time quiet hours are judged by (tests fix it).
        public var now: @Sendable () -> Date = { Date() }
        public init() {}
    }

    private let pool: ConnectionPool
    private let channels: Channels
    private let options: Options
    private let log: Log
    private let metrics: JobMetrics
    private let running = Mutex<Task<Void, Never>?>(nil)
    /// Webhook calls block: they run here, at most `concurrency` at once.
    private let deliveryQueue = DispatchQueue(label: "roost.outbox.delivery", attributes: .concurrent)
    /// Log-mode lines are written whole, one at a time.
    private let stdout = Mutex(())

    public convenience init(pool: ConnectionPool, mode: Mode, options: Options = Options(), log: Log, metrics: JobMetrics = JobMetrics()) {
        self.init(pool: pool, channels: Channels(mode), options: options, log: log, metrics: metrics)
    }

    public init(pool: ConnectionPool, channels: Channels, options: Options = Options(), log: Log, metrics: JobMetrics = JobMetrics()) {
        self.pool = pool
        self.channels = channels
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
                        ["outbox_id": id.lowercasedText, "error": "\(error)"])
            // Counted as an attempt where the database allows it, so a row that always throws
            // ends `failed` after its attempts like one that is always refused.
            let policy = self.policy
            _ = try? await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant) { connection in
                    try OutboxStore().markFailed(id, error: "\(error)", backoff: { policy.backoff.seconds(afterFailures: $0 + 1) },
                                                 maxAttempts: policy.maxAttempts, on: connection)
                }
            }
        }
    }

    private func deliver(_ id: UUID, tenant: UUID) async throws {
        let webPush = channels.push == .webpush
        let now = options.now
        let loaded = try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant) { connection -> (OutboxMessage, Context)? in
                guard let message = try OutboxStore().message(id, on: connection) else {
                    try OutboxStore().dropJob(id, on: connection)
                    return nil
                }
                if let postponed = try Self.quietUntil(message, now: now(), on: connection) {
                    try OutboxStore().postpone(id, until: postponed, on: connection)
                    return nil
                }
                var context = Context(tenant: try TenantStore().find(id: tenant, on: connection))
                if webPush, message.channel == .push, message.platform == "webpush" {
                    context.subscription = try DeviceStore().webPushSubscription(endpoint: message.recipient, on: connection)
                }
                return (message, context)
            }
        }
        guard let (message, loadedContext) = loaded else { return }
        var context = loadedContext
        if context.subscription != nil, let settings = channels.webPush { context.vapid = try await settings.vapid.key(pool) }
        let outcome = await attempt(message, context: context)
        let attempts = message.attempts + 1
        let policy = self.policy
        let decision = policy.decide(outcome, attempt: attempts, redAlertPush: message.channel == .push && message.severity == "red")
        try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant) { connection in
                if decision.removeDevice { try DeviceStore().deleteWebPush(endpoint: message.recipient, on: connection) }
                switch decision.step {
                case .delivered: try OutboxStore().markDelivered(id, on: connection)
                case .retry(let error):
                    try OutboxStore().markFailed(id, error: error, backoff: { policy.backoff.seconds(afterFailures: $0 + 1) },
                                                 maxAttempts: policy.maxAttempts, on: connection)
                case .failForGood(let error):
                    try OutboxStore().markFailed(id, error: error, backoff: { _ in 0 }, maxAttempts: policy.maxAttempts, permanent: true, on: connection)
                }
                // A red alert that reached none of the member's devices goes by email or SMS.
                if decision.fallBack, try OutboxStore().enqueueFallback(afterFailed: id, on: connection) == .heldBack {
                    OutsideBudget.refused(.alertFallback, tenant: tenant)
                }
            }
        }
        if let error = outcome.error {
            let final = decision.final
            metrics.recordFailure(.outbox, parked: final)
            log.warning(final ? "outbox: delivery failed for good" : "outbox: delivery failed; will retry", [
                "outbox_id": id.lowercasedText, "attempt": String(attempts), "error": error,
            ])
        }
    }

    /// When a push falls in its member's quiet hours, when they end: red alerts and check-in
    /// prompts come through (nil), everything else waits.
    static func quietUntil(_ message: OutboxMessage, now: Date, on connection: PostgresConnection) throws -> Date? {
        guard message.channel == .push, let user = message.userID,
              !(message.template == .checkinPrompt || (message.template == .alert && message.severity == "red")),
              let setting = try PreferenceStore().load(user, on: connection).quietHours, let quiet = QuietHours(setting) else { return nil }
        return quiet.end(after: now)
    }

    /// Delivers one row through its channel on the worker's own threads (every channel but the
    /// log blocks on I/O, each within its timeout).
    private func attempt(_ message: OutboxMessage, context: Context) async -> DeliveryOutcome {
        await withCheckedContinuation { continuation in
            deliveryQueue.async {
                let data = (try? JSONSerialization.jsonObject(with: Data(message.data.utf8))) as? [String: Any] ?? [:]
                let delivery = Delivery(message: message, data: data, tenant: context.tenant, subscription: context.subscription, vapid: context.vapid)
                let channel = self.channels.channel(for: message, timeoutSeconds: self.options.webhookTimeoutSeconds) { line in
                    self.stdout.withLock { _ in FileHandle.standardOutput.write(Data(line)) }
                }
                let outcome: DeliveryOutcome
                do {
                    outcome = try channel.send(delivery)
                } catch let failure as OutboundFailure where failure.isRefusal {
                    outcome = .failed(failure.description)
                } catch {
                    outcome = .retry("\(error)")
                }
                continuation.resume(returning: outcome)
            }
        }
    }

}
