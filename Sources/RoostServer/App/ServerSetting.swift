import RoostHTTP

/// One configurable setting: its flag, its variable, its default and how a value is applied.
struct ServerSetting: Sendable {
    let flag: String
    let environment: String
    let placeholder: String
    let defaultDescription: String
    let help: String
    let isSwitch: Bool
    let apply: @Sendable (inout ServerConfiguration, String, String) throws -> Void

    static let all: [ServerSetting] = [
        text("--database-url", "DATABASE_URL", "URL", "none (scripts/run starts an embedded cluster)",
             "PostgreSQL connection URI (libpq syntax)") { $0.databaseURL = $1 },
        text("--migration-database-url", "ROOST_MIGRATION_DATABASE_URL", "URL", "none: migrations use DATABASE_URL",
             "the tables' owner, for migrations; DATABASE_URL's role then owns nothing and gets only row access") {
            $0.migrationDatabaseURL = $1
        },
        text("--listen", "ROOST_LISTEN", "HOST:PORT", "127.0.0.1:8080",
             "where the HTTP and WebSocket server listens") { $0.listen = $1 },
        text("--metrics-listen", "ROOST_METRICS_LISTEN", "HOST:PORT|off", "127.0.0.1:9090",
             "where /metrics is served, apart from the public listener (off: nowhere)") { $0.metricsListen = $1 },
        text("--mqtt-listen", "ROOST_MQTT_LISTEN", "HOST:PORT|off", "off",
             "where bridges connect over MQTT 3.1.1/5 (key as password; put TLS in front); off: no MQTT listener") { $0.mqttListen = $1 },
        text("--dc09-listen", "ROOST_DC09_LISTEN", "HOST:PORT|off", "off",
             "where alarm panels report over SIA DC-09, TCP and UDP on the one port; off: no DC-09 receiver") { $0.dc09Listen = $1 },
        integer("--dc09-behind-s", "ROOST_DC09_BEHIND_S", 0...3600, 40,
                "how far a DC-09 frame's timestamp may be behind the receiver's clock (NAK beyond)") { $0.dc09BehindSeconds = $1 },
        integer("--dc09-ahead-s", "ROOST_DC09_AHEAD_S", 0...3600, 20,
                "how far a DC-09 frame's timestamp may be ahead of the receiver's clock (NAK beyond)") { $0.dc09AheadSeconds = $1 },
        integer("--dc09-idle-s", "ROOST_DC09_IDLE_S", 10...86_400, 300,
                "a panel's TCP connection quiet this long is closed") { $0.dc09IdleSeconds = $1 },
        ServerSetting(flag: "--admin-token", environment: "ROOST_ADMIN_TOKEN", placeholder: "TOKEN", defaultDescription: "unset: operator API off",
                      help: "bearer token for /v1/admin, at least 32 characters (python3 -c 'import secrets; print(secrets.token_hex(32))')",
                      isSwitch: false) { configuration, value, source in
            guard value.count >= 32 else {
                throw ConfigurationError("\(source) must be at least 32 characters (it guards every tenant): make one with "
                                         + "python3 -c 'import secrets; print(secrets.token_hex(32))'")
            }
            configuration.adminToken = value
        },
        choice("--delivery", "ROOST_DELIVERY", ["log", "webhook"], "log",
               "how the outbox delivers invitations, codes and notifications") { $0.delivery = $1 },
        text("--delivery-webhook-url", "ROOST_DELIVERY_WEBHOOK_URL", "URL", "none",
             "where webhook delivery POSTs") { $0.deliveryWebhookURL = $1 },
        text("--delivery-webhook-secret", "ROOST_DELIVERY_WEBHOOK_SECRET", "SECRET", "none",
             "HMAC secret that signs webhook deliveries") { $0.deliveryWebhookSecret = $1 },
        choice("--email", "ROOST_EMAIL", ["log", "webhook", "smtp"], "ROOST_DELIVERY's",
               "how email leaves: the log, the webhook, or SMTP (ROOST_SMTP_URL)") { $0.emailRoute = $1 },
        choice("--sms", "ROOST_SMS", ["log", "webhook"], "ROOST_DELIVERY's",
               "how SMS leaves: the log or the webhook (an SMS gateway)") { $0.smsRoute = $1 },
        choice("--push", "ROOST_PUSH", ["log", "webhook", "webpush"], "ROOST_DELIVERY's",
               "how pushes leave; webpush: Web Push devices directly, the others through the webhook") { $0.pushRoute = $1 },
        text("--smtp-url", "ROOST_SMTP_URL", "URL", "none",
             "smtp://user:password@host:587 (STARTTLS required), smtps://host:465 (TLS), smtp+plain://host:25 (a local relay only)") {
            $0.smtpURL = $1
        },
        text("--smtp-from", "ROOST_SMTP_FROM", "ADDRESS", "none",
             "the sender of email, e.g. 'Roost <noreply@example.org>'") { $0.smtpFrom = $1 },
        text("--tls-ca-file", "ROOST_TLS_CA_FILE", "PATH", "none: the system trust store only",
             "a PEM file of CAs the outbound TLS client trusts too (SMTP, Web Push, webhook)") { $0.tlsCAFile = $1 },
        text("--templates-dir", "ROOST_TEMPLATES_DIR", "PATH", "none: the shipped templates/",
             "a folder like templates/ whose files replace the shipped ones (templates/<locale>/<name>.{txt,html,push})") {
            $0.templatesDirectory = $1
        },
        text("--web-dir", "ROOST_WEB_DIR", "PATH|off", "the shipped web/",
             "the folder of the web app served at / (off: serve the API only)") { $0.webDirectory = $1 },
        text("--map-tile-url", "ROOST_MAP_TILE_URL", "URL|off", "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
             "the web app's map tiles, fetched by the browser ({z}/{x}/{y} template; the page may load images from its origin; off: places as text and a link)") {
            $0.mapTileURL = $1
        },
        text("--map-attribution", "ROOST_MAP_ATTRIBUTION", "TEXT", "© OpenStreetMap contributors",
             "the credit shown on every map, as the tile server's terms ask") { $0.mapAttribution = $1 },
        text("--public-url", "ROOST_PUBLIC_URL", "URL", "none: messages carry codes, not links",
             "where people reach Roost (https://watch.example.org): links in email and Web Push") { $0.publicURL = $1 },
        text("--webpush-hosts", "ROOST_WEBPUSH_HOSTS", "HOST,...", "fcm.googleapis.com,updates.push.services.mozilla.com,*.push.apple.com,*.notify.windows.com",
             "push services a Web Push subscription's endpoint may be on (https only; *.name for any name under it)") { $0.webPushHosts = $1 },
        text("--outbound-allow-nets", "ROOST_OUTBOUND_ALLOW_NETS", "CIDR,...", "none: endpoints reach public addresses only",
             "networks any outbound request may reach, at any port and by IP address, e.g. 127.0.0.0/8 for a local push relay") {
            $0.outboundAllowNets = $1
        },
        text("--vapid-subject", "ROOST_VAPID_SUBJECT", "mailto:|https:", "none (required by ROOST_PUSH=webpush)",
             "how push services reach the operator, sent in every VAPID token") { $0.vapidSubject = $1 },
        text("--secret-key", "ROOST_SECRET_KEY", "SECRET", "none: the VAPID private key is stored unsealed",
             "seals the VAPID private key in the database (AES-256-GCM); keep it, or the key cannot be opened") { $0.secretKey = $1 },
        integer("--delivery-timeout-s", "ROOST_DELIVERY_TIMEOUT_S", 1...300, 10,
                "how long one delivery (webhook, SMTP, Web Push) may take") { $0.deliveryTimeoutSeconds = $1 },
        integer("--delivery-connections", "ROOST_DELIVERY_CONNECTIONS", 1...1024, 128,
                "kept connections this node opens to one push service or webhook, at most") { $0.deliveryConnections = $1 },
        integer("--delivery-http2-connections", "ROOST_DELIVERY_HTTP2_CONNECTIONS", 0...64, 4,
                "HTTP/2 connections to one push service that offers it, each carrying many pushes at once (0: HTTP/1.1 only)") {
            $0.deliveryHTTP2Connections = $1
        },
        integer("--delivery-lease-s", "ROOST_DELIVERY_LEASE_S", 1...3600, 120,
                "how long a node holds the deliveries it claimed before another node may send them") { $0.deliveryLeaseSeconds = $1 },
        choice("--log-level", "ROOST_LOG_LEVEL", LogLevel.allCases.map(\.rawValue), "info",
               "least severe log level written") { $0.logLevel = LogLevel(rawValue: $1)! },
        integer("--feed-min-poll-s", "ROOST_FEED_MIN_POLL_S", 10...86_400, 120,
                "the shortest interval an official warnings feed may be polled at") { $0.feedMinPollSeconds = $1 },
        integer("--checkin-min-s", "ROOST_CHECKIN_MIN_S", 1...86_400, 60,
                "shortest check-in deadline, seconds") { $0.checkinMinSeconds = $1 },
        integer("--db-pool-size", "ROOST_DB_POOL_SIZE", 1...500, 10,
                "PostgreSQL connections this node may open") { $0.databasePoolSize = $1 },
        integer("--db-acquire-timeout-ms", "ROOST_DB_ACQUIRE_TIMEOUT_MS", 1...600_000, 5000,
                "how long a request waits for a free connection before 503") {
            $0.databaseAcquireTimeoutMilliseconds = $1
        },
        integer("--db-connect-timeout-s", "ROOST_DB_CONNECT_TIMEOUT_S", 1...300, 5,
                "how long opening a PostgreSQL connection may take") { $0.databaseConnectTimeoutSeconds = $1 },
        integer("--session-ttl-s", "ROOST_SESSION_TTL_S", 60...31_536_000, 2_592_000,
                "a session ends this long after its last use (sliding)") { $0.sessionLifetimeSeconds = $1 },
        integer("--session-max-age-s", "ROOST_SESSION_MAX_AGE_S", 60...31_536_000, 7_776_000,
                "a session ends this long after sign-in, however often it is used") { $0.sessionMaxAgeSeconds = $1 },
        integer("--invitation-ttl-s", "ROOST_INVITATION_TTL_S", 60...31_536_000, 604_800,
                "how long an invitation stays valid") { $0.invitationLifetimeSeconds = $1 },
        text("--migrations-dir", "ROOST_MIGRATIONS_DIR", "PATH", "sql/ beside the checkout or ./sql",
             "folder of NNNN_name.sql migrations") { $0.migrationsDirectory = $1 },
        integer("--threads", "ROOST_THREADS", 0...256, 0, "event-loop threads (0: one per core)") { $0.threads = $1 },
        integer("--max-connections", "ROOST_MAX_CONNECTIONS", 1...10_000_000, 200_000,
                "concurrent connections per node, at most the open-file limit less the pool and 64 + 4 per event loop; beyond, 503 and close") { $0.network.maxConnections = $1 },
        integer("--max-connections-per-address", "ROOST_MAX_CONNECTIONS_PER_ADDRESS", 0...10_000_000, 20_000,
                "connections from one client address (0: no limit); beyond, 503 and close") {
            $0.network.maxConnectionsPerAddress = $1
        },
        integer("--max-header-bytes", "ROOST_MAX_HEADER_BYTES", 1024...1_048_576, 16_384,
                "request header section limit (431 beyond)") { $0.network.maxHeaderBytes = $1 },
        integer("--max-body-bytes", "ROOST_MAX_BODY_BYTES", 1024...16_777_216, 65_536,
                "request body limit (413 beyond)") { $0.network.maxBodyBytes = $1 },
        integer("--header-timeout-ms", "ROOST_HEADER_TIMEOUT_MS", 10...600_000, 10_000,
                "time to receive a request's headers once it has begun (slowloris)") { $0.network.headerTimeoutMilliseconds = $1 },
        integer("--idle-timeout-ms", "ROOST_IDLE_TIMEOUT_MS", 10...3_600_000, 60_000,
                "idle keep-alive connections close after this") { $0.network.idleTimeoutMilliseconds = $1 },
        integer("--max-handlers", "ROOST_MAX_HANDLERS", 1...1_000_000, 1024,
                "requests handled at once; beyond, 503 with Retry-After") { $0.network.maxConcurrentHandlers = $1 },
        integer("--max-uploads", "ROOST_MAX_UPLOADS", 1...1_000_000, 256,
                "streamed uploads at once on the node, in slots apart from the handlers'; beyond, 503 with Retry-After") {
            $0.network.maxConcurrentUploads = $1
        },
        integer("--upload-min-rate", "ROOST_UPLOAD_MIN_RATE", 0...1_073_741_824, 8192,
                "bytes a second an upload must average over ROOST_UPLOAD_RATE_WINDOW_S (0: no minimum); below, 408") {
            $0.network.minUploadBytesPerSecond = $1
        },
        integer("--upload-rate-window-s", "ROOST_UPLOAD_RATE_WINDOW_S", 1...3600, 30,
                "the window an upload's rate is averaged over") { $0.network.uploadRateWindowMilliseconds = $1 * 1000 },
        integer("--uploads-per-uploader", "ROOST_UPLOADS_PER_UPLOADER", 1...10_000, 4,
                "uploads at once from one account, one bridge or one client address, per node; beyond, 429") {
            $0.abuse.uploadsPerUploader = $1
        },
        integer("--readiness-timeout-ms", "ROOST_READINESS_TIMEOUT_MS", 100...60_000, 1000,
                "how long /readyz waits for PostgreSQL's answer; longer, 503") { $0.readinessTimeoutMilliseconds = $1 },
        integer("--shutdown-grace-ms", "ROOST_SHUTDOWN_GRACE_MS", 0...600_000, 10_000,
                "how long in-flight requests may finish after SIGTERM") { $0.network.shutdownGraceMilliseconds = $1 },
        integer("--ws-max-message-bytes", "ROOST_WS_MAX_MESSAGE_BYTES", 125...16_777_216, 65_536,
                "WebSocket message size after reassembly (close 1009 beyond)") { $0.network.maxWebSocketMessageBytes = $1 },
        integer("--ws-ping-interval-ms", "ROOST_WS_PING_INTERVAL_MS", 100...3_600_000, 30_000,
                "how often the server pings each WebSocket") { $0.network.pingIntervalMilliseconds = $1 },
        integer("--ws-pong-timeout-ms", "ROOST_WS_PONG_TIMEOUT_MS", 100...3_600_000, 60_000,
                "no pong this long after a ping: close 1001") { $0.network.pongTimeoutMilliseconds = $1 },
        integer("--ws-max-queue-bytes", "ROOST_WS_MAX_QUEUE_BYTES", 4096...1_073_741_824, 1_048_576,
                "bytes queued for one WebSocket client before it is closed with 1013") { $0.network.maxOutboundQueueBytes = $1 },
        ServerSetting(flag: "--trusted-proxies", environment: "ROOST_TRUSTED_PROXIES", placeholder: "CIDR,...", defaultDescription: "none",
                      help: "proxies whose X-Forwarded-For names the client (throttles count per client address; IPv6 per /64)",
                      isSwitch: false) { configuration, value, _ in
            _ = try TrustedProxies(parsing: value)
            configuration.trustedProxies = value
        },
        integer("--registrations-per-address-per-hour", "ROOST_REGISTRATIONS_PER_ADDRESS_PER_HOUR", 1...1_000_000, 20,
                "accounts created from one client address in an hour; beyond, 429") { $0.abuse.registrationsPerAddressPerHour = $1 },
        integer("--unknown-tenant-sign-ins-per-address", "ROOST_UNKNOWN_TENANT_SIGN_INS_PER_ADDRESS", 1...1_000_000, 20,
                "sign-ins naming a tenant that does not exist, from one address in 15 minutes; beyond, 429") {
            $0.abuse.unknownTenantSignInsPerAddress = $1
        },
        integer("--invitations-per-sender-per-day", "ROOST_INVITATIONS_PER_SENDER_PER_DAY", 1...1_000_000, 50,
                "invitations one member sends in a day; beyond, 429") { $0.abuse.invitationsPerSenderPerDay = $1 },
        integer("--invitations-per-recipient-per-day", "ROOST_INVITATIONS_PER_RECIPIENT_PER_DAY", 1...1_000_000, 3,
                "invitations one email address or phone number receives in a day; beyond, 429") { $0.abuse.invitationsPerRecipientPerDay = $1 },
        integer("--invitations-per-group-per-day", "ROOST_INVITATIONS_PER_GROUP_PER_DAY", 1...1_000_000, 200,
                "invitations sent from one group in a day; beyond, 429") { $0.abuse.invitationsPerGroupPerDay = $1 },
        integer("--groups-per-user-per-day", "ROOST_GROUPS_PER_USER_PER_DAY", 1...1_000_000, 10,
                "groups one user creates in a day; beyond, 429") { $0.abuse.groupsPerUserPerDay = $1 },
        integer("--posts-per-account-per-minute", "ROOST_POSTS_PER_ACCOUNT_PER_MINUTE", 1...1_000_000, 60,
                "messages one account posts in a minute on a node (a burst of as many, then that rate); beyond, 429") {
            $0.abuse.postsPerAccountPerMinute = $1
        },
        integer("--alerts-per-user-per-hour", "ROOST_ALERTS_PER_USER_PER_HOUR", 1...1_000_000, 10,
                "amber and red alerts one member raises in an hour; beyond, 429") { $0.abuse.alertsPerUserPerHour = $1 },
        integer("--verification-codes-per-user-per-day", "ROOST_VERIFICATION_CODES_PER_USER_PER_DAY", 1...1_000_000, 5,
                "verification codes sent to one user in a day (a resend counts); beyond, 429") { $0.abuse.verificationCodesPerUserPerDay = $1 },
        integer("--outside-per-destination-per-day", "ROOST_OUTSIDE_PER_DESTINATION_PER_DAY", 1...1_000_000, 10,
                "emails and texts accounts cause to one address in a day, across tenants; beyond, 429 destination_budget") {
            $0.abuse.outsidePerDestinationPerDay = $1
        },
        integer("--outside-per-account-per-day", "ROOST_OUTSIDE_PER_ACCOUNT_PER_DAY", 1...1_000_000, 30,
                "emails and texts one account causes in a day, every kind together; beyond, 429 account_budget") {
            $0.abuse.outsidePerAccountPerDay = $1
        },
        integer("--outside-per-new-account-per-day", "ROOST_OUTSIDE_PER_NEW_ACCOUNT_PER_DAY", 1...1_000_000, 8,
                "the same for an account younger than a day or with no proven address") { $0.abuse.outsidePerNewAccountPerDay = $1 },
        integer("--outside-per-tenant-per-day", "ROOST_OUTSIDE_PER_TENANT_PER_DAY", 1...100_000_000, 20_000,
                "emails and texts one tenant sends in a day; beyond, 429 tenant_budget, a metric and a log line") {
            $0.abuse.outsidePerTenantPerDay = $1
        },
        integer("--media-share-percent", "ROOST_MEDIA_SHARE_PERCENT", 1...100, 10,
                "the part of a tenant's media quota one member's or one bridge's uploads may take; beyond, 413 quota_exceeded") {
            $0.abuse.mediaSharePercent = $1
        },
        integer("--media-alert-reserve-percent", "ROOST_MEDIA_ALERT_RESERVE_PERCENT", 0...50, 5,
                "the last part of the media quota, kept for uploads made for alerts (bridge snapshots, POST /v1/media?for=alert)") {
            $0.abuse.mediaAlertReservePercent = $1
        },
        integer("--password-resets-per-address-per-hour", "ROOST_PASSWORD_RESETS_PER_ADDRESS_PER_HOUR", 1...1_000_000, 10,
                "password reset requests from one client address in an hour; beyond, 429") { $0.abuse.passwordResetsPerAddressPerHour = $1 },
        integer("--max-upload-bytes", "ROOST_MAX_UPLOAD_BYTES", 1024...1_073_741_824, 26_214_400,
                "one media upload's size; beyond, 413 (before the body is read when it is declared)") { $0.abuse.maxUploadBytes = $1 },
        integer("--tenant-media-quota-mb", "ROOST_TENANT_MEDIA_QUOTA_MB", 1...1_048_576, 1024,
                "what one tenant's media may take in all, in MiB; beyond, 413 quota_exceeded") { $0.abuse.tenantMediaQuotaBytes = $1 << 20 },
        integer("--wrong-reset-codes-per-address-per-hour", "ROOST_WRONG_RESET_CODES_PER_ADDRESS_PER_HOUR", 1...1_000_000, 20,
                "wrong password reset codes from one client address in an hour; beyond, 429") { $0.abuse.wrongResetCodesPerAddressPerHour = $1 },
        flag("--conformance-echo", "ROOST_CONFORMANCE_ECHO",
             "serve the test-only WebSocket echo at /v1/conformance/echo (never in production)") { $0.conformanceEcho = $1 },
        flag("--no-outbox-worker", "ROOST_NO_OUTBOX_WORKER",
             "this node delivers nothing from the outbox (other nodes do)") { $0.outboxWorker = !$1 },
        flag("--no-access-log", "ROOST_NO_ACCESS_LOG", "do not log a line per request") { $0.accessLog = !$1 },
        flag("--reuse-port", "ROOST_REUSE_PORT",
             "let other roost serve processes listen on the same port (SO_REUSEPORT; the kernel spreads connections); without it a taken port is an error") {
            $0.reusePort = $1
        },
        flag("--no-migrate", "ROOST_NO_MIGRATE", "do not apply migrations at start") { $0.migrate = !$1 },
        flag("--allow-table-owner", "ROOST_ALLOW_TABLE_OWNER",
             "serve even as a role that owns Roost's tables (which could switch row-level security off)") { $0.allowTableOwner = $1 },
        flag("--allow-superuser", "ROOST_ALLOW_SUPERUSER",
             "run even as a PostgreSQL superuser (which bypasses row-level security)") { $0.allowSuperuser = $1 },
    ]

    private static func text(
        _ flag: String, _ environment: String, _ placeholder: String, _ defaultDescription: String, _ help: String,
        _ set: @escaping @Sendable (inout ServerConfiguration, String) -> Void
    ) -> ServerSetting {
        ServerSetting(
            flag: flag, environment: environment, placeholder: placeholder, defaultDescription: defaultDescription,
            help: help, isSwitch: false
        ) { configuration, value, _ in set(&configuration, value) }
    }

    private static func choice(
        _ flag: String, _ environment: String, _ choices: [String], _ defaultValue: String, _ help: String,
        _ set: @escaping @Sendable (inout ServerConfiguration, String) -> Void
    ) -> ServerSetting {
        ServerSetting(
            flag: flag, environment: environment, placeholder: choices.joined(separator: "|"),
            defaultDescription: defaultValue, help: help, isSwitch: false
        ) { configuration, value, source in
            guard choices.contains(value) else {
                throw ConfigurationError("\(source) must be one of \(choices.joined(separator: ", ")), not '\(value)'")
            }
            set(&configuration, value)
        }
    }

    private static func integer(
        _ flag: String, _ environment: String, _ range: ClosedRange<Int>, _ defaultValue: Int, _ help: String,
        _ set: @escaping @Sendable (inout ServerConfiguration, Int) -> Void
    ) -> ServerSetting {
        ServerSetting(
            flag: flag, environment: environment, placeholder: "N", defaultDescription: String(defaultValue),
            help: help, isSwitch: false
        ) { configuration, value, source in
            guard let number = Int(value), range.contains(number) else {
                throw ConfigurationError(
                    "\(source) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(value)'")
            }
            set(&configuration, number)
        }
    }

    private static func flag(
        _ flag: String, _ environment: String, _ help: String,
        _ set: @escaping @Sendable (inout ServerConfiguration, Bool) -> Void
    ) -> ServerSetting {
        ServerSetting(
            flag: flag, environment: environment, placeholder: "", defaultDescription: "off", help: help,
            isSwitch: true
        ) { configuration, value, source in
            switch value.lowercased() {
            case "1", "true", "yes", "on": set(&configuration, true)
            case "0", "false", "no", "off": set(&configuration, false)
            default: throw ConfigurationError("\(source) must be true or false, not '\(value)'")
            }
        }
    }
}
