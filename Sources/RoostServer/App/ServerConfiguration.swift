import Foundation
import RoostHTTP

/// Everything `roost serve` reads: each setting from a `ROOST_*` variable (or `DATABASE_URL`),
/// overridden by its flag. `roost serve --help` prints this table.
public struct ServerConfiguration: Sendable {
    public var databaseURL: String?
    /// The tables' owner, for migrations (and the grants that let `databaseURL`'s role serve);
    /// nil: migrations run on `databaseURL`.
    public var migrationDatabaseURL: String?
    /// Serve even as a role that owns Roost's tables.
    public var allowTableOwner = false
    public var listen = "127.0.0.1:8080"
    /// Where `/metrics` is served (never on `listen`); `off` for nowhere.
    public var metricsListen = "127.0.0.1:9090"
    /// Where bridges connect over MQTT; "off" (the default): nowhere.
    public var mqttListen = "off"
    /// Where alarm panels report over SIA DC-09, TCP and UDP on one port; "off" (the default): nowhere.
    public var dc09Listen = "off"
    /// How far a DC-09 frame's timestamp may be behind and ahead of the receiver's clock, and
    /// how long a panel's quiet TCP connection is kept.
    public var dc09BehindSeconds = 40
    public var dc09AheadSeconds = 20
    public var dc09IdleSeconds = 300
    /// The shortest interval a CAP feed may be polled at (`roost feed add --poll-s`, the operator API).
    public var feedMinPollSeconds = 120
    public var adminToken: String?
    public var delivery = "log"
    public var deliveryWebhookURL: String?
    public var deliveryWebhookSecret: String?
    /// Each channel's route (`ROOST_EMAIL`, `ROOST_SMS`, `ROOST_PUSH`); nil: `delivery`'s.
    public var emailRoute: String?
    public var smsRoute: String?
    public var pushRoute: String?
    public var smtpURL: String?
    public var smtpFrom: String?
    /// One more CA the outbound TLS client trusts, beside the system's.
    public var tlsCAFile: String?
    /// An operator's folder of templates, searched before the shipped `templates/`.
    public var templatesDirectory: String?
    /// Where people reach Roost (`https://watch.example.org`): links in rendered messages.
    public var publicURL: String?
    /// The web app's folder; nil: the shipped `web/`; "off": no web app.
    public var webDirectory: String?
    /// The web app's map tiles (`MapTiles`): nil, OpenStreetMap's; "off", no map.
    public var mapTileURL: String?
    public var mapAttribution: String?
    public var deliveryTimeoutSeconds = 10
    /// Kept connections to one origin (a push service, the webhook), at most (`OutboxWorker.Options`).
    public var deliveryConnections = 128
    public var deliveryHTTP2Connections = 4
    /// How long claimed deliveries are held before another node may take them (`OutboxWorker.Options`).
    public var deliveryLeaseSeconds = 120
    /// Push services Web Push endpoints may be on; nil: the public browser services.
    public var webPushHosts: String?
    /// `ROOST_OUTBOUND_ALLOW_NETS`: CIDRs every outbound request may reach (endpoints included).
    public var outboundAllowNets: String?
    public var vapidSubject: String?
    /// Seals secrets Roost keeps in the database (the VAPID private key).
    public var secretKey: String?
    public var logLevel = LogLevel.info
    public var checkinMinSeconds = 60
    public var sessionLifetimeSeconds = 2_592_000
    public var sessionMaxAgeSeconds = 7_776_000
    public var invitationLifetimeSeconds = 604_800
    public var databasePoolSize = 10
    public var databaseAcquireTimeoutMilliseconds = 5000
    public var databaseConnectTimeoutSeconds = 5
    /// How long `/readyz` waits for PostgreSQL's answer before calling the node not ready.
    public var readinessTimeoutMilliseconds = 1000
    public var migrationsDirectory: String?
    public var migrate = true
    public var allowSuperuser = false
    /// Event-loop threads; 0 means one per core.
    public var threads = 0
    public var network = NetworkLimits()
    public var abuse = AbuseLimits()
    /// Proxies whose X-Forwarded-For is believed (CIDR list); none by default.
    public var trustedProxies = ""
    public var accessLog = true
    /// Other processes may listen on the same port (`--reuse-port`); otherwise a taken port is an error.
    public var reusePort = false
    /// Whether this node runs an outbox worker (any number of nodes may).
    public var outboxWorker = true
    /// Serves `/v1/conformance/echo` (tests and the WebSocket conformance suite only).
    public var conformanceEcho = false

    public init() {}

    /// Reads the environment, then the flags; throws `ConfigurationError` with one clear line.
    public static func load(environment: [String: String], arguments: [String]) throws -> ServerConfiguration {
        var configuration = ServerConfiguration()
        for setting in ServerSetting.all {
            if let value = environment[setting.environment], !value.isEmpty {
                try setting.apply(&configuration, value, "\(setting.environment)")
            }
        }
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let (flag, inlineValue) = split(argument)
            guard let setting = ServerSetting.all.first(where: { $0.flag == flag }) else {
                throw ConfigurationError("unknown option \(argument); see roost serve --help")
            }
            if setting.isSwitch {
                guard inlineValue == nil else { throw ConfigurationError("\(flag) takes no value") }
                try setting.apply(&configuration, "true", flag)
            } else if let inlineValue {
                try setting.apply(&configuration, inlineValue, flag)
            } else {
                index += 1
                guard index < arguments.count else { throw ConfigurationError("\(flag) needs a value") }
                try setting.apply(&configuration, arguments[index], flag)
            }
            index += 1
        }
        return configuration
    }

    private static func split(_ argument: String) -> (String, String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }

    /// The settings as `roost serve --help` shows them.
    public static var helpText: String {
        "Usage: roost serve [options]\n\n" + optionsHelp()
    }

    /// The settings a command that only opens the database takes (`migrate`, `tenant`, `outbox`).
    public static let databaseFlags: Set<String> = [
        "--database-url", "--migration-database-url", "--migrations-dir", "--db-connect-timeout-s", "--log-level", "--no-migrate",
        "--allow-superuser", "--allow-table-owner",
    ]

    /// Each setting (or those of `flags`) with its variable, what it does and its default.
    public static func optionsHelp(_ flags: Set<String>? = nil) -> String {
        var lines = ["Options (each also read from its environment variable):"]
        for setting in ServerSetting.all where flags?.contains(setting.flag) ?? true {
            let flag = setting.isSwitch ? setting.flag : "\(setting.flag) \(setting.placeholder)"
            let column = flag.count < 34 ? flag.padding(toLength: 34, withPad: " ", startingAt: 0) : flag + "  "
            lines.append("  \(column)\(setting.environment)")
            lines.append("      \(setting.help) (default: \(setting.defaultDescription))")
        }
        return lines.joined(separator: "\n")
    }
}
