import Foundation
import RoostHTTP
import RoostFanout
import RoostPersistence
import RoostProtocol

/// What the `roost` executable does; it only parses arguments and calls these.
public enum RoostCommands {
    /// `roost serve`: open and migrate the database, serve until SIGINT/SIGTERM, then shut
    /// down gracefully (in-flight requests finish, up to the grace period) and return.
    public static func serve(_ configuration: ServerConfiguration) async throws {
        let log = Log(level: configuration.logLevel)
        let addresses = try ListenAddress.parseList(configuration.listen)
        let push = try pushSettings(configuration)
        let delivery = try deliveryChannels(configuration, push: push, log: log)
        let (pool, _) = try await DatabaseStartup.open(configuration, log: log, migrate: configuration.migrate, serving: true)
        defer { pool.close() }
        // The VAPID key is made (or opened) now, so a wrong ROOST_SECRET_KEY stops the start.
        if let webPush = delivery.webPush { _ = try await webPush.vapid.key(pool) }
        await FileLimits.openDispatchTimers()
        let threads = configuration.threads > 0 ? configuration.threads : ProcessInfo.processInfo.activeProcessorCount
        var configuration = configuration
        configuration.network.maxConnections = FileLimits.connectionLimit(
            configured: configuration.network.maxConnections, openFileLimit: FileLimits.raiseOpenFileLimit(log: log),
            poolSize: configuration.databasePoolSize, threads: threads + (configuration.metricsListen == "off" ? 0 : 1), log: log)

        let serverBox = ServerBox()
        let hub = StreamHub.make(pool: pool, queueLimit: configuration.network.maxOutboundQueueBytes, log: log)
        if configuration.conformanceEcho {
            log.warning("serving the test-only WebSocket echo at /v1/conformance/echo")
        }
        let jobs = JobMetrics()
        let web = try webApp(configuration, log: log)
        // The newest migration this Roost ships, read from the folder once for /readyz and /metrics.
        let requiredSchema = DatabaseStartup.requiredSchema(configuration)
        let router = try routes(configuration, pool: pool, hub: hub, hashingThreads: max(1, threads), push: push, web: web, log: log,
                                requiredSchema: requiredSchema)
        let server = try HTTPServer(
            router: router, limits: configuration.network, addresses: addresses, threads: threads, log: log,
            accessLog: configuration.accessLog, errorMapper: APIError.mapping, sharedWithOtherProcesses: configuration.reusePort)
        serverBox.server = server
        let listener = FanoutListener(configuration: pool.configuration, server: server, log: log)
        do {
            try hub.listen(to: listener)
        } catch let error as DatabaseError {
            throw StartupError(error)
        }
        hub.startAuditing(every: StreamHub.auditInterval)
        do {
            try server.start()
        } catch let error as SystemError where error.errno == EADDRINUSE {
            throw StartupError("cannot listen on \(configuration.listen): another process listens there (a roost serve already running?); "
                               + "stop it, give this one another --listen, or pass --reuse-port to both to share the port on purpose")
        } catch let error as SystemError {
            throw StartupError("cannot listen on \(configuration.listen): \(error)")
        }
        let mqtt = try startMQTT(configuration, pool: pool, on: server, log: log)
        let dc09 = try startDC09(configuration, pool: pool, on: server, log: log)
        let deliveries = DeliveryMetrics()
        let metricsServer = try startMetrics(configuration, pool: pool, jobs: jobs, deliveries: deliveries, hub: hub, log: log,
                                             requiredSchema: requiredSchema) { serverBox.server }
        var outboxOptions = OutboxWorker.Options()
        outboxOptions.webhookTimeoutSeconds = configuration.deliveryTimeoutSeconds
        outboxOptions.connectionsPerOrigin = configuration.deliveryConnections
        outboxOptions.http2ConnectionsPerOrigin = configuration.deliveryHTTP2Connections
        outboxOptions.leaseSeconds = configuration.deliveryLeaseSeconds
        OutsideBudget.log.withLock { $0 = log }
        let outbox = OutboxWorker(pool: pool, channels: delivery, options: outboxOptions, log: log, metrics: jobs, deliveries: deliveries)
        if configuration.outboxWorker { outbox.start() }
        let checkins = DeadlineScheduler(pool: pool, log: log, metrics: jobs)
        checkins.start()
        let feeds = try feedPoller(configuration, pool: pool, log: log)
        feeds.start()
        log.info("listening", [
            "addresses": addresses.map(\.description).joined(separator: ","),
            "ports": server.boundPorts.map(String.init).joined(separator: ","), "threads": String(threads),
        ])
        let signal = await ShutdownSignal.wait()
        log.info("shutting down", ["signal": String(signal), "open_connections": String(server.openConnections)])
        listener.stop()
        mqtt?.stop()
        dc09?.stop()
        hub.stopAuditing()
        await metricsServer?.shutdown()
        await server.shutdown()
        await outbox.stop()
        await checkins.stop()
        await feeds.stop()
        log.info("stopped")
    }

    /// The poller of the operator's CAP feeds (every node runs one; each feed is polled by one
    /// node at a time), through the outbound policy and the TLS trust every delivery uses.
    static func feedPoller(_ configuration: ServerConfiguration, pool: ConnectionPool, log: Log) throws -> FeedPoller {
        var network = OutboundNetwork()
        network.policy = try outboundPolicy(configuration)
        var options = FeedPoller.Options()
        if let publicURL = configuration.publicURL { options.userAgent = "roost (+\(publicURL))" }
        return FeedPoller(pool: pool, network: network, tls: try TLSClientContext(extraCAFile: configuration.tlsCAFile), options: options, log: log)
    }

    /// The MQTT listener for bridges, when `--mqtt-listen` names an address.
    static func startMQTT(_ configuration: ServerConfiguration, pool: ConnectionPool, on server: HTTPServer, log: Log) throws -> MQTTBridges? {
        guard configuration.mqttListen != "off" else { return nil }
        guard let address = try ListenAddress.parseList(configuration.mqttListen).first else { return nil }
        let mqtt = MQTTBridges(pool: pool, bridges: .announcingReturns(pool: pool), log: log)
        do {
            try mqtt.start(address, on: server)
        } catch let error as SystemError where error.errno == EADDRINUSE {
            throw StartupError("cannot listen on \(configuration.mqttListen) for MQTT: another process listens there")
        } catch let error as SystemError {
            throw StartupError("cannot listen on \(configuration.mqttListen) for MQTT: \(error)")
        }
        MQTTBridges.running.withLock { $0 = mqtt }
        return mqtt
    }

    /// The DC-09 receiver for alarm panels, when `--dc09-listen` names an address.
    static func startDC09(_ configuration: ServerConfiguration, pool: ConnectionPool, on server: HTTPServer, log: Log) throws -> DC09Receiver? {
        guard configuration.dc09Listen != "off" else { return nil }
        guard let address = try ListenAddress.parseList(configuration.dc09Listen).first else { return nil }
        if case .unix = address { throw StartupError("--dc09-listen must be HOST:PORT: panels report over TCP and UDP") }
        var limits = DC09Receiver.Limits()
        limits.behindSeconds = TimeInterval(configuration.dc09BehindSeconds)
        limits.aheadSeconds = TimeInterval(configuration.dc09AheadSeconds)
        limits.idleMilliseconds = configuration.dc09IdleSeconds * 1000
        let receiver = DC09Receiver(pool: pool, bridges: .announcingReturns(pool: pool), limits: limits, log: log)
        do {
            try receiver.start(address, on: server)
        } catch let error as SystemError where error.errno == EADDRINUSE {
            throw StartupError("cannot listen on \(configuration.dc09Listen) for DC-09: another process listens there")
        } catch let error as SystemError {
            throw StartupError("cannot listen on \(configuration.dc09Listen) for DC-09: \(error)")
        }
        DC09Receiver.running.withLock { $0 = receiver }
        return receiver
    }

    /// Every route `roost serve` answers: the API of API.md (described by openapi.yaml, which
    /// a test holds to this list), the web app's files and, only with `--conformance-echo`,
    /// the test-only echo. `requiredSchema`: the migration `/readyz` waits for (nil: none checked).
    static func routes(
        _ configuration: ServerConfiguration, pool: ConnectionPool, hub: StreamHub, hashingThreads: Int, push: PushSettings? = nil,
        web: WebApp? = nil, log: Log? = nil, requiredSchema: Int? = nil
    ) throws -> Router {
        var builder = Router.Builder()
        let probe = ReadinessProbe(configuration: pool.configuration, requiredSchema: requiredSchema,
                                   timeoutMilliseconds: configuration.readinessTimeoutMilliseconds)
        probe.warm()
        OperationsRoutes.add(to: &builder, probe: probe)
        TenantRoutes.add(to: &builder, pool: pool, adminToken: configuration.adminToken)
        TenantAdminRoutes.add(to: &builder, pool: pool, adminToken: configuration.adminToken,
                              invitationLifetime: configuration.invitationLifetimeSeconds, limits: configuration.abuse)
        FeedAdminRoutes.add(to: &builder, pool: pool, adminToken: configuration.adminToken, policy: try outboundPolicy(configuration),
                            minPollSeconds: configuration.feedMinPollSeconds)
        let accounts = AccountRoutes(pool: pool, sessionLifetime: configuration.sessionLifetimeSeconds,
                                     sessionMaxAge: configuration.sessionMaxAgeSeconds, hashingThreads: hashingThreads,
                                     invitationLifetime: configuration.invitationLifetimeSeconds, limits: configuration.abuse,
                                     proxies: try TrustedProxies(parsing: configuration.trustedProxies), push: try push ?? pushSettings(configuration),
                                     log: log)
        APIRoutes(accounts: accounts, checkinMinimumSeconds: configuration.checkinMinSeconds, hub: hub, publicURL: configuration.publicURL).add(to: &builder)
        web?.add(to: &builder)
        if configuration.conformanceEcho {
            builder.addWebSocket("/v1/conformance/echo") { _ in EchoSession() }
        }
        return builder.build()
    }

    /// The web app (`ROOST_WEB_DIR`, else the shipped `web/`); nil when turned off or, with
    /// a warning, when no `web/` ships beside the binary.
    static func webApp(_ configuration: ServerConfiguration, log: Log) throws -> WebApp? {
        if configuration.webDirectory == "off" { return nil }
        guard let folder = configuration.webDirectory.map({ URL(fileURLWithPath: $0) }) ?? WebApp.shippedFolder() else {
            log.warning("no web/ folder beside the executable or in the working directory: serving the API only (set ROOST_WEB_DIR)")
            return nil
        }
        let app = try WebApp(folder: folder, tiles: try MapTiles.from(configuration))
        log.info("serving the web app", ["folder": folder.path, "files": String(app.files.count),
                                         "bytes": String(app.files.reduce(0) { $0 + $1.body.count }),
                                         "gzip_bytes": String(app.files.reduce(0) { $0 + ($1.gzipped ?? $1.body).count })])
        return app
    }

    /// The operator's `/metrics` listener (`ROOST_METRICS_LISTEN`, `off` for none): one event
    /// loop of its own, on an address apart from the public one.
    static func startMetrics(_ configuration: ServerConfiguration, pool: ConnectionPool, jobs: JobMetrics, deliveries: DeliveryMetrics,
                             hub: StreamHub, log: Log, requiredSchema: Int?, server: @escaping @Sendable () -> HTTPServer?) throws -> HTTPServer? {
        guard configuration.metricsListen != "off" else { return nil }
        let addresses = try ListenAddress.parseList(configuration.metricsListen)
        var builder = Router.Builder()
        OperationsRoutes.addMetrics(to: &builder, pool: pool, jobs: jobs, deliveries: deliveries, hub: hub,
                                    schema: requiredSchema, server: server)
        let metrics = try HTTPServer(router: builder.build(), limits: NetworkLimits(), addresses: addresses, threads: 1, log: log, accessLog: false,
                                      errorMapper: APIError.mapping)
        do {
            try metrics.start()
        } catch let error as SystemError where error.errno == EADDRINUSE {
            // Never shared: two nodes answering one scrape address would alternate their figures.
            throw StartupError("cannot listen on \(configuration.metricsListen) for metrics: another process listens there "
                               + "(a second node?); give each node its own --metrics-listen, or --metrics-listen off")
        } catch let error as SystemError {
            throw StartupError("cannot listen on \(configuration.metricsListen) for metrics: \(error)")
        }
        log.info("metrics listening", ["addresses": addresses.map(\.description).joined(separator: ","),
                                       "ports": metrics.boundPorts.map(String.init).joined(separator: ",")])
        return metrics
    }

    /// How the outbox delivers each channel (`ROOST_EMAIL`, `ROOST_SMS`, `ROOST_PUSH`, each
    /// defaulting to `ROOST_DELIVERY`), with what each route needs checked before serving.
    static func deliveryChannels(_ configuration: ServerConfiguration, push: PushSettings? = nil, log: Log) throws -> OutboxWorker.Channels {
        typealias Route = OutboxWorker.Channels.Route
        var channels = OutboxWorker.Channels()
        let fallback = Route(rawValue: configuration.delivery) ?? .log
        channels.email = configuration.emailRoute.flatMap(Route.init) ?? fallback
        channels.sms = configuration.smsRoute.flatMap(Route.init) ?? fallback
        channels.push = configuration.pushRoute.flatMap(Route.init) ?? fallback
        channels.network.policy = try outboundPolicy(configuration)
        let routes = [channels.email, channels.sms, channels.push]
        if routes.contains(.webhook) || configuration.deliveryWebhookURL != nil {
            guard let text = configuration.deliveryWebhookURL else {
                throw ConfigurationError("the webhook route needs ROOST_DELIVERY_WEBHOOK_URL, an http:// or https:// URL")
            }
            do {
                channels.webhook = (try channels.network.policy.url(text, from: .operator, schemes: ["http", "https"]), configuration.deliveryWebhookSecret)
            } catch {
                throw ConfigurationError("ROOST_DELIVERY_WEBHOOK_URL must be an http:// or https:// URL Roost can send to: \(error)")
            }
        }
        if routes.contains(.smtp) || routes.contains(.webpush) || channels.webhook?.url.scheme == "https" {
            channels.tls = try TLSClientContext(extraCAFile: configuration.tlsCAFile)
        }
        if channels.email != .smtp, configuration.smtpURL != nil {
            throw ConfigurationError("ROOST_SMTP_URL is set but email leaves by \(channels.email.rawValue) (ROOST_EMAIL, else ROOST_DELIVERY): "
                                     + "set ROOST_EMAIL=smtp to send through it, or unset ROOST_SMTP_URL")
        }
        if channels.email == .smtp {
            guard let url = configuration.smtpURL else { throw ConfigurationError("ROOST_EMAIL=smtp needs ROOST_SMTP_URL") }
            let smtp = try SMTPSettings(url: url, from: configuration.smtpFrom)
            if smtp.security == .plain {
                log.warning("ROOST_SMTP_URL is smtp+plain://: email and any password cross the network unencrypted; use it only for a relay on this host")
            }
            channels.smtp = smtp
        }
        if let publicURL = configuration.publicURL {
            guard let url = URL(string: publicURL), url.scheme == "https" || url.scheme == "http", url.host?.isEmpty == false else {
                throw ConfigurationError("ROOST_PUBLIC_URL must be an http(s):// URL such as https://watch.example.org, not '\(publicURL)'")
            }
        }
        channels.messages = RenderedMessages(override: configuration.templatesDirectory.map { URL(fileURLWithPath: $0) },
                                             publicURL: configuration.publicURL)
        if channels.push == .webpush {
            let settings = try push ?? pushSettings(configuration)
            guard let subject = settings.subject, subject.hasPrefix("mailto:") || subject.hasPrefix("https://") else {
                throw ConfigurationError("ROOST_PUSH=webpush needs ROOST_VAPID_SUBJECT, a mailto: or https: contact for the push services")
            }
            channels.webPush = settings
        }
        if (routes.contains(.smtp) || routes.contains(.webpush)) && channels.messages.folders.isEmpty {
            throw ConfigurationError("rendered delivery needs the templates/ folder: none was found beside the executable or in the working directory (set ROOST_TEMPLATES_DIR)")
        }
        return channels
    }

    /// Web Push settings from `ROOST_WEBPUSH_HOSTS`, `ROOST_VAPID_SUBJECT` and `ROOST_SECRET_KEY`.
    /// `serve` makes them once and hands the same to device registration and delivery, so the
    /// VAPID key is loaded once per process.
    static func pushSettings(_ configuration: ServerConfiguration) throws -> PushSettings {
        var settings = PushSettings()
        if let hosts = configuration.webPushHosts { settings.hosts = try WebPushHosts(parsing: hosts) }
        settings.subject = configuration.vapidSubject
        settings.vapid = VAPIDKeys(secretKey: configuration.secretKey)
        settings.network.policy = try outboundPolicy(configuration)
        return settings
    }

    /// The outbound policy, with the networks `ROOST_OUTBOUND_ALLOW_NETS` lets every request reach.
    static func outboundPolicy(_ configuration: ServerConfiguration) throws -> OutboundPolicy {
        guard let text = configuration.outboundAllowNets, !text.isEmpty else { return OutboundPolicy() }
        switch IPNetwork.list(text) {
        case .success(let networks): return OutboundPolicy(allowedNetworks: networks)
        case .failure(let refusal): throw ConfigurationError("ROOST_OUTBOUND_ALLOW_NETS: \(refusal)")
        }
    }

    /// `roost migrate`: apply what is missing and say what was applied.
    public static func migrate(_ configuration: ServerConfiguration) async throws -> [String] {
        let log = Log(level: configuration.logLevel)
        let (pool, applied) = try await DatabaseStartup.open(configuration, log: log, migrate: true)
        pool.close()
        return applied.map(\.fileName)
    }

    /// `roost tenant create`.
    public static func createTenant(
        _ configuration: ServerConfiguration, slug: String, name: String, registration: String
    ) async throws -> Tenant {
        guard TenantSlug(slug) != nil else { throw ConfigurationError("tenant slug must be \(TenantSlug.rule), not '\(slug)'") }
        guard let registration = Tenant.Registration(rawValue: registration) else {
            throw ConfigurationError("--registration must be open or invite_only, not '\(registration)'")
        }
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...200).contains(trimmed.count) else {
            throw ConfigurationError("--name must be 1 to 200 characters")
        }
        let (pool, _) = try await DatabaseStartup.open(configuration, log: Log(level: .warning), migrate: configuration.migrate)
        defer { pool.close() }
        do {
            return try await pool.withConnection {
                try TenantStore().create(slug: slug, name: trimmed, registration: registration, on: $0)
            }
        } catch let error as DatabaseError where error.code == .uniqueViolation {
            throw StartupError("a tenant with slug '\(slug)' already exists")
        } catch let error as DatabaseError {
            throw StartupError(error)
        }
    }

    /// `roost tenant update`: renames a tenant, switches its registration, sets the countries it
    /// texts or how many days its groups keep their history (`none`: for good).
    public static func updateTenant(
        _ configuration: ServerConfiguration, slug: String, name: String?, registration: String?, smsPrefixes: String? = nil,
        retentionDays: String? = nil, locale: String? = nil
    ) async throws -> Tenant {
        if let locale, !MessageLocale.shipped.contains(locale) {
            throw ConfigurationError("--locale takes one of \(MessageLocale.shipped.sorted().joined(separator: ", ")), not '\(locale)'")
        }
        let retention = try retentionDays.map { text -> Int? in
            guard text != "none" else { return nil }
            guard let days = Int(text), Retention.days.contains(days) else {
                throw ConfigurationError("--retention-days takes 1 to 36500 (or none), not '\(text)'")
            }
            return days
        }
        let prefixes = try smsPrefixes.map { text -> [String]? in
            guard text != "all" else { return nil }
            let list = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard !list.isEmpty, list.allSatisfy({ $0.range(of: "^\\+[1-9][0-9]{0,6}$", options: .regularExpression) != nil }) else {
                throw ConfigurationError("--sms-prefixes takes E.164 prefixes such as +45,+46 (or all), not '\(text)'")
            }
            return list
        }
        let parsed = try registration.map { value in
            guard let parsed = Tenant.Registration(rawValue: value) else {
                throw ConfigurationError("--registration must be open or invite_only, not '\(value)'")
            }
            return parsed
        }
        let trimmed = name?.trimmingCharacters(in: .whitespacesAndNewlines)
        if let trimmed, !(1...200).contains(trimmed.count) { throw ConfigurationError("--name must be 1 to 200 characters") }
        guard trimmed != nil || parsed != nil || prefixes != nil || retention != nil || locale != nil else {
            throw ConfigurationError("tenant update needs --name, --registration, --sms-prefixes, --retention-days or --locale")
        }
        let (pool, _) = try await DatabaseStartup.open(configuration, log: Log(level: .warning), migrate: configuration.migrate)
        defer { pool.close() }
        let updated: Tenant?
        do {
            updated = try await pool.withConnection { connection in
                try connection.withTransaction { connection -> Tenant? in
                    if let prefixes, !(try TenantStore().setSMSPrefixes(slug: slug, prefixes, on: connection)) { return nil }
                    if let retention, try Retention.setTenant(slug: slug, days: retention, on: connection) == nil { return nil }
                    return try TenantStore().update(slug: slug, name: trimmed, registration: parsed, locale: locale, on: connection)
                }
            }
        } catch let error as DatabaseError {
            throw StartupError(error)
        }
        guard let updated else { throw StartupError("no tenant has slug '\(slug)'") }
        return updated
    }

    /// `roost tenant list`.
    public static func listTenants(_ configuration: ServerConfiguration) async throws -> [Tenant] {
        let (pool, _) = try await DatabaseStartup.open(configuration, log: Log(level: .warning), migrate: configuration.migrate)
        defer { pool.close() }
        do {
            return try await pool.withConnection { try TenantStore().list(on: $0) }
        } catch let error as DatabaseError {
            throw StartupError(error)
        }
    }
}

extension RoostCommands {
    /// A failed delivery with its tenant's slug, for `roost outbox list --failed`.
    public struct FailedDeliveryLine: Sendable {
        public let tenant: String
        public let delivery: FailedDelivery
    }

    /// `roost outbox list --failed`: every tenant's failed deliveries (the outbox is tenant data
    /// under row security, so each tenant is read in its own transaction).
    public static func failedDeliveries(_ configuration: ServerConfiguration, limit: Int = 1000) async throws -> [FailedDeliveryLine] {
        let (pool, _) = try await DatabaseStartup.open(configuration, log: Log(level: .warning), migrate: configuration.migrate)
        defer { pool.close() }
        do {
            return try await pool.withConnection { connection in
                var lines: [FailedDeliveryLine] = []
                for tenant in try TenantStore().list(on: connection) where lines.count < limit {
                    let failed = try connection.withTenantTransaction(tenant.id) { try OutboxStore().failed(limit: limit - lines.count, on: $0) }
                    lines += failed.map { FailedDeliveryLine(tenant: tenant.slug, delivery: $0) }
                }
                return lines
            }
        } catch let error as DatabaseError {
            throw StartupError(error)
        }
    }

    /// `roost sql --tenant SLUG`: the database URL Roost serves with and the tenant's id, for a
    /// psql session in which row security shows that tenant's rows (`roost.tenant_id` set at
    /// connect, as Roost's own transactions set it); without it every table reads empty.
    public static func sqlSession(_ configuration: ServerConfiguration, tenant slug: String) async throws -> (url: String, tenant: UUID) {
        var configuration = configuration
        configuration.migrate = false
        let (pool, _) = try await DatabaseStartup.open(configuration, log: Log(level: .warning), migrate: false)
        defer { pool.close() }
        do {
            guard let tenant = try await pool.withConnection({ try TenantStore().find(slug: slug, on: $0) }) else {
                throw StartupError("no tenant has the slug \(slug) (roost tenant list names them)")
            }
            return (configuration.databaseURL ?? "", tenant.id)
        } catch let error as DatabaseError {
            throw StartupError(error)
        }
    }

    /// `roost audit --tenant SLUG [--since TIME] [--limit N]`: the tenant's audit across its
    /// groups, newest first, each entry as the API writes it (one JSON object a line).
    public static func audit(_ configuration: ServerConfiguration, tenant slug: String, since: Date?, limit: Int) async throws -> [String] {
        let (pool, _) = try await DatabaseStartup.open(configuration, log: Log(level: .warning), migrate: configuration.migrate)
        defer { pool.close() }
        do {
            return try await pool.withConnection { connection in
                guard let tenant = try TenantStore().find(slug: slug, on: connection) else { throw StartupError("no tenant has the slug \(slug)") }
                return try connection.withTenantTransaction(tenant.id) {
                    try AuditLog().entries(group: nil, before: nil, since: since, limit: limit, on: $0).map(AuditRoutes.json)
                }
            }
        } catch let error as DatabaseError {
            throw StartupError(error)
        }
    }

    /// `roost outbox retry ID`: queues a failed delivery again with a fresh set of attempts (an
    /// invitation with a fresh token; a delivery whose code is gone is refused: `DeliveryRetry`).
    /// Returns what to tell the operator.
    @discardableResult
    public static func retryDelivery(_ configuration: ServerConfiguration, id text: String) async throws -> String {
        guard let id = UUID(text: text) else { throw ConfigurationError("'\(text)' is not a delivery id (a UUID)") }
        let (pool, _) = try await DatabaseStartup.open(configuration, log: Log(level: .warning), migrate: configuration.migrate)
        defer { pool.close() }
        let outcome: DeliveryRetry.Outcome?
        do {
            outcome = try await pool.withConnection { connection in
                for tenant in try TenantStore().list(on: connection) {
                    if let done = try connection.withTenantTransaction(tenant.id, { try DeliveryRetry.retry(id, tenant: tenant.id, on: $0) }) {
                        return done
                    }
                }
                return nil
            }
        } catch let error as DatabaseError {
            throw StartupError(error)
        }
        switch outcome {
        case nil: throw StartupError("no failed delivery has id \(id.lowercasedText)")
        case .refused(let why)?: throw StartupError("delivery \(id.lowercasedText) not retried: \(why)")
        case .reissued?: return "queued again with a fresh invitation token (the one it carried no longer works)"
        case .retried?: return "queued again"
        }
    }
}

extension RoostCommands {
    /// A job waiting for an operator, for `roost jobs list --failed`.
    public struct FailedJobLine: Sendable {
        public let kind: String
        public let id: UUID
        public let tenant: String
        public let attempts: Int
        public let lastError: String?
    }

    /// `roost jobs list --failed`: parked scheduled jobs, then failed deliveries, across tenants.
    public static func failedJobs(_ configuration: ServerConfiguration, limit: Int = 1000) async throws -> [FailedJobLine] {
        let deliveries = try await failedDeliveries(configuration, limit: limit)
        let (pool, _) = try await DatabaseStartup.open(configuration, log: Log(level: .warning), migrate: configuration.migrate)
        defer { pool.close() }
        do {
            let (parked, tenants) = try await pool.withConnection { connection in
                (try JobStore().parked(limit: limit, on: connection),
                 Dictionary(try TenantStore().list(on: connection).map { ($0.id, $0.slug) }, uniquingKeysWith: { first, _ in first }))
            }
            return parked.map { FailedJobLine(kind: $0.kind, id: $0.id, tenant: tenants[$0.tenantID] ?? "?", attempts: $0.attempts, lastError: $0.lastError) }
                + deliveries.map { FailedJobLine(kind: JobKind.outbox.name, id: $0.delivery.id, tenant: $0.tenant, attempts: $0.delivery.attempts,
                                                 lastError: $0.delivery.lastError) }
        } catch let error as DatabaseError {
            throw StartupError(error)
        }
    }

    /// `roost jobs retry KIND ID`: a parked job runs again with a fresh set of attempts.
    public static func retryJob(_ configuration: ServerConfiguration, kind name: String, id text: String) async throws {
        guard let kind = JobKind.named(name) else {
            throw ConfigurationError("'\(name)' is not a job kind (\(JobKind.all.map(\.name).joined(separator: ", ")))")
        }
        if kind == .outbox {
            try await retryDelivery(configuration, id: text)
            return
        }
        guard let id = UUID(text: text) else { throw ConfigurationError("'\(text)' is not a job id (a UUID)") }
        let (pool, _) = try await DatabaseStartup.open(configuration, log: Log(level: .warning), migrate: configuration.migrate)
        defer { pool.close() }
        let retried: Bool
        do {
            retried = try await pool.withConnection { try JobStore().retry(kind, id: id, on: $0) }
        } catch let error as DatabaseError {
            throw StartupError(error)
        }
        guard retried else { throw StartupError("no parked \(kind.name) job has id \(id.lowercasedText)") }
    }
}

/// Lets routes reach the server that serves them (it is built after the router).
final class ServerBox: Sendable {
    private let value = Mutex<HTTPServer?>(nil)
    var server: HTTPServer? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

import Synchronization

extension RoostCommands {
    /// A feed as `roost feed list` prints it: id, poll interval, tenants, URL, last status.
    public struct FeedLine: Sendable {
        public let id: UUID
        public let url: String
        public let name: String
        public let tenants: String
        public let pollSeconds: Int
        public let lastStatus: String?
    }

    /// `roost feed add`: a CAP feed for some tenants (`tenants` slugs) or all (nil).
    public static func addFeed(_ configuration: ServerConfiguration, url: String, name: String?, tenants: [String]?, pollSeconds: Int?,
                               sender: String?) async throws -> FeedLine {
        let feed: (url: String, name: String, poll: Int, sender: String?)
        do {
            feed = try FeedAdminRoutes.validated(url: url, name: name, pollSeconds: pollSeconds, sender: sender,
                                                 policy: try outboundPolicy(configuration), minPollSeconds: configuration.feedMinPollSeconds)
        } catch let error as APIError {
            throw ConfigurationError(error.message.replacingOccurrences(of: "poll_s", with: "--poll-s"))
        }
        let (pool, _) = try await DatabaseStartup.open(configuration, log: Log(level: .warning), migrate: configuration.migrate)
        defer { pool.close() }
        do {
            return try await pool.withConnection { connection in
                let slugs = try FeedAdminRoutes.slugs(on: connection)
                let ids = Dictionary(slugs.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
                let chosen = try tenants.map { names in
                    try names.map { slug in
                        guard let id = ids[slug] else { throw StartupError("no tenant has the slug '\(slug)' (roost tenant list)") }
                        return id
                    }
                }
                let row = try FeedStore().add(url: feed.url, name: feed.name, tenants: chosen, pollSeconds: feed.poll, sender: feed.sender, on: connection)
                return line(row, slugs: slugs)
            }
        } catch is FeedStore.Taken {
            throw StartupError("a feed with the URL \(url) is configured already (roost feed list)")
        } catch let error as DatabaseError {
            throw StartupError(error)
        }
    }

    public static func listFeeds(_ configuration: ServerConfiguration) async throws -> [FeedLine] {
        try await withFeeds(configuration) { connection in
            let slugs = try FeedAdminRoutes.slugs(on: connection)
            return try FeedStore().feeds(on: connection).map { line($0, slugs: slugs) }
        }
    }

    /// `roost feed remove ID` and `roost feed poll ID`: whether the feed existed.
    public static func removeFeed(_ configuration: ServerConfiguration, id: String) async throws -> Bool {
        guard let id = UUID(uuidString: id) else { throw ConfigurationError("a feed's ID is a UUID (roost feed list)") }
        return try await withFeeds(configuration) { try FeedStore().remove(id, on: $0) }
    }

    public static func pollFeed(_ configuration: ServerConfiguration, id: String) async throws -> Bool {
        guard let id = UUID(uuidString: id) else { throw ConfigurationError("a feed's ID is a UUID (roost feed list)") }
        return try await withFeeds(configuration) { try FeedStore().pollSoon(id, on: $0) }
    }

    private static func withFeeds<Value: Sendable>(_ configuration: ServerConfiguration,
                                                   _ body: @escaping @Sendable (PostgresConnection) throws -> Value) async throws -> Value {
        let (pool, _) = try await DatabaseStartup.open(configuration, log: Log(level: .warning), migrate: configuration.migrate)
        defer { pool.close() }
        do {
            return try await pool.withConnection(body)
        } catch let error as DatabaseError {
            throw StartupError(error)
        }
    }

    private static func line(_ row: CAPFeedRow, slugs: [UUID: String]) -> FeedLine {
        FeedLine(id: row.id, url: row.url, name: row.name, tenants: row.tenants.map { $0.compactMap { slugs[$0] }.joined(separator: ",") } ?? "all",
                 pollSeconds: row.pollSeconds, lastStatus: row.lastStatus)
    }
}
