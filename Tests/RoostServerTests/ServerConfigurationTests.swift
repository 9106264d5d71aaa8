import RoostHTTP
@testable import RoostServer
import Testing

struct ServerConfigurationTests {
    @Test func defaultsMatchTheDocumentedOnes() throws {
        let configuration = try ServerConfiguration.load(environment: [:], arguments: [])
        #expect(configuration.databaseURL == nil)
        #expect(configuration.listen == "127.0.0.1:8080")
        #expect(configuration.delivery == "log")
        #expect(configuration.checkinMinSeconds == 60)
        #expect(configuration.readinessTimeoutMilliseconds == 1000)
        #expect(configuration.migrate)
        #expect(!configuration.allowSuperuser)
    }

    @Test func aFlagOverridesItsEnvironmentVariable() throws {
        let configuration = try ServerConfiguration.load(
            environment: ["ROOST_LISTEN": "0.0.0.0:9000", "DATABASE_URL": "postgres://env/db", "ROOST_DB_POOL_SIZE": "4",
                          "ROOST_READINESS_TIMEOUT_MS": "2500"],
            arguments: ["--listen", "127.0.0.1:7000", "--db-pool-size=6", "--no-migrate", "--allow-superuser"])
        #expect(configuration.listen == "127.0.0.1:7000")
        #expect(configuration.databaseURL == "postgres://env/db")
        #expect(configuration.databasePoolSize == 6)
        #expect(configuration.readinessTimeoutMilliseconds == 2500)
        #expect(!configuration.migrate)
        #expect(configuration.allowSuperuser)
    }

    @Test(arguments: [
        (["--db-pool-size", "0"], "--db-pool-size must be a whole number from 1 to 500, not '0'"),
        (["--db-pool-size", "many"], "--db-pool-size must be a whole number from 1 to 500, not 'many'"),
        (["--delivery", "carrier-pigeon"], "--delivery must be one of log, webhook, not 'carrier-pigeon'"),
        (["--frobnicate"], "unknown option --frobnicate; see roost serve --help"),
        (["--listen"], "--listen needs a value"),
        (["--no-migrate=yes"], "--no-migrate takes no value"),
    ])
    func aBadArgumentIsOneClearLine(arguments: [String], message: String) {
        #expect {
            try ServerConfiguration.load(environment: [:], arguments: arguments)
        } throws: { error in
            (error as? ConfigurationError)?.description == message
        }
    }

    @Test func aBadEnvironmentValueNamesTheVariable() {
        #expect {
            try ServerConfiguration.load(environment: ["ROOST_LOG_LEVEL": "loud"], arguments: [])
        } throws: { error in
            (error as? ConfigurationError)?.description.hasPrefix("ROOST_LOG_LEVEL must be one of") == true
        }
    }

    @Test func helpListsEveryVariableOfTheAPIContract() {
        let help = ServerConfiguration.helpText
        for variable in [
            "DATABASE_URL", "ROOST_LISTEN", "ROOST_ADMIN_TOKEN", "ROOST_DELIVERY", "ROOST_DELIVERY_WEBHOOK_URL",
            "ROOST_DELIVERY_WEBHOOK_SECRET", "ROOST_LOG_LEVEL", "ROOST_CHECKIN_MIN_S",
        ] {
            #expect(help.contains(variable), "roost serve --help does not mention \(variable)")
        }
    }
}

/// What each delivery route needs is checked before serving, with the setting named.
struct DeliveryConfigurationTests {
    func channels(_ environment: [String: String]) throws -> OutboxWorker.Channels {
        try RoostCommands.deliveryChannels(try ServerConfiguration.load(environment: environment, arguments: []), log: Log(level: .error))
    }

    @Test func eachChannelTakesItsOwnRouteOrROOST_DELIVERYs() throws {
        let hook = ["ROOST_DELIVERY": "webhook", "ROOST_DELIVERY_WEBHOOK_URL": "https://gateway.example.org/roost"]
        let mixed = try channels(hook.merging(["ROOST_EMAIL": "smtp", "ROOST_SMTP_URL": "smtps://mail.example.org",
                                               "ROOST_SMTP_FROM": "noreply@example.org", "ROOST_PUSH": "webpush",
                                               "ROOST_VAPID_SUBJECT": "mailto:ops@example.org"]) { $1 })
        #expect(mixed.email == .smtp && mixed.sms == .webhook && mixed.push == .webpush && mixed.tls != nil && mixed.webPush != nil)
        let plain = try channels([:])
        #expect(plain.email == .log && plain.sms == .log && plain.push == .log && plain.tls == nil)
    }

    @Test(arguments: [
        ["ROOST_EMAIL": "smtp"],
        ["ROOST_EMAIL": "smtp", "ROOST_SMTP_URL": "smtp://mail.example.org"],
        ["ROOST_EMAIL": "smtp", "ROOST_SMTP_URL": "imap://mail.example.org", "ROOST_SMTP_FROM": "a@example.org"],
        ["ROOST_PUSH": "webpush"],
        ["ROOST_PUSH": "webpush", "ROOST_VAPID_SUBJECT": "ops@example.org"],
        ["ROOST_SMS": "webhook"],
        ["ROOST_PUBLIC_URL": "watch.example.org"],
        ["ROOST_PUSH": "webpush", "ROOST_VAPID_SUBJECT": "mailto:a@b.example", "ROOST_WEBPUSH_HOSTS": "http://x"],
    ])
    func whatARouteNeedsIsRequired(environment: [String: String]) {
        #expect(throws: ConfigurationError.self) { try channels(environment) }
    }
}
