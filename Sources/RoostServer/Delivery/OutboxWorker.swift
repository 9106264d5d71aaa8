import Dispatch
import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol
import Synchronization

/// Delivers the outbox (API.md "Outbound delivery"), built for fanout: a red alert's thousands
/// of pushes go out about as fast as the push services take them.
///
/// - Claims: up to `batchSize` due jobs at once (SKIP LOCKED, with a lease, so any number of
///   nodes deliver each row once), critical lanes first and tenants taking turns within a lane
///   (`OutboxStore.claim`); a new claim is made while earlier ones are still being sent, up to
///   `inFlight` deliveries, so one slow delivery never holds the next claim.
/// - Loads and records a batch at a time: the rows of one tenant in one statement (with each
///   device's subscription and each member's quiet hours), and what became of them, as they
///   finish, in one statement per kind of outcome (`OutboxStore.record`).
/// - Sends over kept connections: every HTTP channel (Web Push, the webhook) goes through the
///   queue of its origin (`OriginQueue`): up to `connectionsPerOrigin` kept-alive connections
///   each, TLS sessions resumed, a `429` slowing down that origin only, a failing origin's
///   breaker opening so it holds no threads. SMTP goes the same way over a few kept sessions to
///   the relay (`sessionsPerRelay`), each carrying many emails; the log runs on threads of its own.
/// - Decides by `DeliveryPolicy`: retry with backoff and jitter until `maxAttempts`, then
///   `failed`; fail at once when no retry changes it (an SMTP 5xx); remove a device that is
///   gone; offer a red alert's fallback once its push failed for good.
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
        /// `webpush` sends Web Push devices, and UnifiedPush devices that registered a
        /// subscription, directly; other devices then go to the webhook when one is set, or to
        /// the log.
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

        func route(_ message: OutboxMessage) -> Route {
            switch message.channel {
            case .email: return email
            case .sms: return sms
            default:
                guard push == .webpush else { return push }
                let direct = message.platform == "webpush" || (message.platform == "unifiedpush" && message.subscription != nil)
                return direct ? .webpush : (webhook != nil ? .webhook : .log)
            }
        }
    }

    /// How a delivery is carried: on a thread of the worker's own (the log), or through the
    /// queue of the origin it goes to (a push service, the webhook, the SMTP relay).
    enum Carrier {
        case ownThread(any DeliveryChannel)
        case origin(any OriginChannel)
    }

    /// The retry policy of these options.
    var policy: DeliveryPolicy {
        DeliveryPolicy(maxAttempts: options.maxAttempts, backoff: Backoff(base: options.baseBackoffSeconds, cap: 3600, jitter: 0.5...1.0))
    }

    public struct Options: Sendable {
        public var maxAttempts = 6
        /// The first retry waits about this long; each next one twice as long (capped at an hour).
        public var baseBackoffSeconds = 2.0
        /// How often an idle worker looks for due deliveries.
        public var pollIntervalMilliseconds = 200
        /// Jobs in one claim.
        public var batchSize = 512
        /// Members of a large group's alert whose pushes are queued at a time (one transaction).
        public var fanoutBatch = 1000
        /// Jobs of one tenant in one claim.
        public var perTenant = 512
        /// Deliveries claimed and not yet written back, on this node.
        public var inFlight = 2048
        /// Log deliveries in flight at once on this node.
        public var concurrency = 8
        /// Kept connections to one origin (a push service, the webhook), at most: at 50 ms a
        /// push, 128 carry about 2,500 pushes a second.
        public var connectionsPerOrigin = 128
        /// HTTP/2 connections to one origin that offers it (by ALPN), at most: each carries up to
        /// 256 requests at once (fewer if the server says so). 0 speaks HTTP/1.1 only.
        public var http2ConnectionsPerOrigin = 4
        /// Kept sessions to the SMTP relay, at most: each carries many emails.
        public var sessionsPerRelay = 4
        /// A kept connection unused this long is closed.
        public var idleConnectionSeconds = 30.0
        public var leaseSeconds = 120
        public var webhookTimeoutSeconds = 10
        /// The time quiet hours are judged by (tests fix it).
        public var now: @Sendable () -> Date = { Date() }
        public init() {}
    }

    private let pool: ConnectionPool
    private let channels: Channels
    private let options: Options
    private let log: Log
    /// Claims and fanout expansions failing again and again are said once, then every 30 s.
    private let failures: FailureLog
    private let metrics: JobMetrics
    private let deliveries: DeliveryMetrics
    private let origins: OriginQueues
    private let tokens = VAPIDTokens()
    private let rendered = RenderedNotifications()
    private let running = BackgroundTask()
    /// Claimed deliveries not yet written back.
    private let claimed = Atomic<Int>(0)
    /// Log deliveries run here, at most `concurrency` at once.
    private let blockingQueue = DispatchQueue(label: "roost.outbox.delivery", attributes: .concurrent)
    /// Log-mode lines are written whole, one at a time.
    private let stdout = Mutex(())

    public convenience init(pool: ConnectionPool, mode: Mode, options: Options = Options(), log: Log, metrics: JobMetrics = JobMetrics()) {
        self.init(pool: pool, channels: Channels(mode), options: options, log: log, metrics: metrics)
    }

    public init(pool: ConnectionPool, channels: Channels, options: Options = Options(), log: Log, metrics: JobMetrics = JobMetrics(),
                deliveries: DeliveryMetrics = DeliveryMetrics()) {
        self.pool = pool
        self.channels = channels
        self.options = options
        self.log = log
        failures = FailureLog(log: log)
        self.metrics = metrics
        self.deliveries = deliveries
        origins = OriginQueues(settings: OriginQueue.Settings(connections: max(1, options.connectionsPerOrigin),
                                                              idleSeconds: options.idleConnectionSeconds,
                                                              timeoutSeconds: options.webhookTimeoutSeconds),
                               network: channels.network, tls: channels.tls, http2Connections: options.http2ConnectionsPerOrigin)
        deliveries.watch(origins)
    }

    // The origins' threads and connections end with the worker, not 30 idle seconds later.
    deinit { origins.shutDown() }

    public func start() {
        running.start { [self] in await loop() }
    }

    /// Stops claiming, and returns once what was claimed is sent and written back.
    public func stop() async {
        await running.stop()
    }

    /// Claims while there is room for more in flight; each claim is sent and written back by a
    /// task of its own, so a claim waiting on a slow origin never holds the next one.
    private func loop() async {
        await withTaskGroup(of: Void.self) { group in
            while !Task.isCancelled {
                do {
                    try await expandFanouts()
                    failures.succeeded("outbox: expanding a fanout failed; retrying")
                } catch {
                    failures.failed("outbox: expanding a fanout failed; retrying", ["error": "\(error)"])
                }
                let room = options.inFlight - claimed.load(ordering: .relaxed)
                var jobs: [ClaimedDelivery] = []
                if room > 0 {
                    do {
                        jobs = try await claim(limit: min(options.batchSize, room))
                        failures.succeeded("outbox: a claim failed; retrying")
                    } catch {
                        failures.failed("outbox: a claim failed; retrying", ["error": "\(error)"])
                    }
                }
                if jobs.isEmpty {
                    // Nothing due, or no room: look again shortly (sooner when only room was short),
                    // or as soon as an alert on this node commits.
                    let wait = room > 0 ? options.pollIntervalMilliseconds : min(50, options.pollIntervalMilliseconds)
                    _ = await DeliveryBell.shared.wait(upTo: .milliseconds(wait))
                    continue
                }
                group.addTask { await self.deliver(jobs) }
            }
            await group.waitForAll()
        }
    }

    private func claim(limit: Int) async throws -> [ClaimedDelivery] {
        let (perTenant, lease) = (options.perTenant, options.leaseSeconds)
        let jobs = try await pool.withConnection { try OutboxStore().claim(limit: limit, perTenant: perTenant, lease: lease, on: $0) }
        claimed.add(jobs.count, ordering: .relaxed)
        return jobs
    }

    /// Queues the next batch of each of a few large groups' alerts (`OutboxStore.expandFanout`):
    /// how many pushes were queued.
    @discardableResult
    private func expandFanouts() async throws -> Int {
        let batch = options.fanoutBatch
        var queued = 0
        for fanout in try await pool.withConnection({ try OutboxStore().fanouts(limit: 4, on: $0) }) {
            queued += try await pool.withConnection { connection in
                try connection.withTenantTransaction(fanout.tenant) { try OutboxStore().expandFanout(fanout.id, members: batch, on: $0).queued }
            }
        }
        return queued
    }

    /// One claim: delivers what is due and returns how many jobs it claimed, once every one of
    /// them is sent and written back (the tests' way to run the worker step by step). Every
    /// large group's alert waiting is expanded first.
    @discardableResult
    public func runOnce() async throws -> Int {
        while try await pool.withConnection({ try !OutboxStore().fanouts(limit: 1, on: $0).isEmpty }) {
            try await expandFanouts()
        }
        let jobs = try await claim(limit: options.batchSize)
        await deliver(jobs)
        return jobs.count
    }

    /// Loads, sends and writes back one claim.
    private func deliver(_ jobs: [ClaimedDelivery]) async {
        defer { claimed.subtract(jobs.count, ordering: .relaxed) }
        let recorder = DeliveryRecorder(pool: pool, policy: policy, log: log, metrics: metrics, deliveries: deliveries)
        let flushing = Task { await recorder.flushPeriodically() }
        var loaded: [(Delivery, Carrier)] = []
        for (tenant, ids) in Dictionary(grouping: jobs, by: \.tenant).mapValues({ $0.map(\.id) }) {
            do {
                loaded += try await load(ids, tenant: tenant, recorder: recorder)
            } catch {
                // Their leases run out and they are claimed again.
                log.warning("outbox: loading deliveries failed; they are tried again", ["tenant_id": tenant.lowercasedText, "error": "\(error)"])
            }
        }
        await withTaskGroup(of: Void.self) { group in
            var blocking = 0
            for (delivery, carrier) in loaded {
                switch carrier {
                case .origin(let channel):
                    group.addTask { recorder.add(delivery, await self.send(delivery, through: channel)) }
                case .ownThread(let channel):
                    // At most about `concurrency` of these at once; the others are bounded by their origins.
                    if blocking >= max(1, options.concurrency) { await group.next(); blocking -= 1 }
                    blocking += 1
                    group.addTask { recorder.add(delivery, await self.send(delivery, through: channel)) }
                }
            }
        }
        flushing.cancel()
        await flushing.value
        await recorder.flush()
    }

    /// The rows of `ids` (one tenant's), each with its channel: rows no longer pending lose their
    /// jobs, pushes inside their member's quiet hours are postponed to their end.
    private func load(_ ids: [UUID], tenant: UUID, recorder: DeliveryRecorder) async throws -> [(Delivery, Carrier)] {
        let now = options.now()
        let (messages, tenantRow) = try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant) { connection -> ([OutboxMessage], Tenant?) in
                let messages = try OutboxStore().messages(ids, on: connection)
                let found = Set(messages.map(\.id))
                let gone = ids.filter { !found.contains($0) }
                if !gone.isEmpty { try OutboxStore().dropJobs(gone, on: connection) }
                return (messages, try TenantStore().find(id: tenant, on: connection))
            }
        }
        var vapid: P256Key?
        if channels.push == .webpush, messages.contains(where: { $0.subscription != nil }), let settings = channels.webPush {
            // A key that cannot be read (the wrong ROOST_SECRET_KEY) fails these pushes' attempts
            // like any other misconfiguration, and says why.
            do {
                vapid = try await settings.vapid.key(pool)
            } catch {
                log.warning("outbox: the VAPID key cannot be read; Web Push deliveries fail until it can", ["error": "\(error)"])
            }
        }
        var loaded: [(Delivery, Carrier)] = []
        // A fanout's rows mostly carry the same data: each text is parsed once.
        var parsed: [String: [String: Any]] = [:]
        for message in messages {
            if let until = Self.quietUntil(message, now: now) {
                recorder.postpone(message, until: until)
                continue
            }
            let data = parsed[message.data] ?? ((try? JSONSerialization.jsonObject(with: Data(message.data.utf8))) as? [String: Any] ?? [:])
            parsed[message.data] = data
            let delivery = Delivery(message: message, data: data, tenant: tenantRow, subscription: message.subscription,
                                    vapid: message.subscription != nil ? vapid : nil)
            loaded.append((delivery, carrier(for: message)))
        }
        return loaded
    }

    /// The channel a row goes out through.
    func carrier(for message: OutboxMessage) -> Carrier {
        switch channels.route(message) {
        case .log: return .ownThread(LogChannel { line in self.stdout.withLock { _ in FileHandle.standardOutput.write(Data(line)) } })
        case .webhook: return .origin(WebhookChannel(webhook: channels.webhook))
        case .smtp: return .origin(SMTPChannel(settings: channels.smtp, messages: channels.messages))
        case .webpush: return .origin(WebPushChannel(settings: channels.webPush, messages: channels.messages, tokens: tokens, rendered: rendered))
        }
    }

    /// When a push falls in its member's quiet hours, when they end: red alerts and check-in
    /// prompts come through (nil), everything else waits.
    static func quietUntil(_ message: OutboxMessage, now: Date) -> Date? {
        guard message.channel == .push, !(message.template == .checkinPrompt || (message.template == .alert && message.severity == "red")),
              let setting = message.quietHours, let quiet = QuietHours(setting) else { return nil }
        return quiet.end(after: now)
    }

    /// Sends through the queue of the delivery's origin; the outcome once it is sent (or refused).
    private func send(_ delivery: Delivery, through channel: any OriginChannel) async -> DeliveryOutcome {
        let url: OutboundURL
        switch channel.destination(of: delivery) {
        case .success(let destination): url = destination
        case .failure(let decided): return decided.outcome
        }
        return await withCheckedContinuation { continuation in
            let connections = channel is SMTPChannel ? options.sessionsPerRelay : options.connectionsPerOrigin
            origins.queue(for: url.origin, connections: connections).submit(OriginQueue.Work(
                send: { link, finish in
                    do {
                        try channel.send(delivery, to: url, over: link, then: finish)
                    } catch {
                        finish(Self.outcome(of: error))
                    }
                },
                done: { continuation.resume(returning: $0) }))
        }
    }

    /// Sends on the worker's own threads.
    private func send(_ delivery: Delivery, through channel: any DeliveryChannel) async -> DeliveryOutcome {
        await withCheckedContinuation { continuation in
            blockingQueue.async { continuation.resume(returning: Self.outcome { try channel.send(delivery) }) }
        }
    }

    /// A send's outcome, whatever it throws.
    private static func outcome(_ send: () throws -> DeliveryOutcome) -> DeliveryOutcome {
        do {
            return try send()
        } catch {
            return outcome(of: error)
        }
    }

    /// What a failure to send comes to: a refusal by the outbound policy fails the row for good,
    /// anything else is tried again.
    static func outcome(of error: any Error) -> DeliveryOutcome {
        if let failure = error as? OutboundFailure, failure.isRefusal { return .failed(failure.description) }
        return .retry("\(error)")
    }
}
