import RoostHTTP
import RoostServer
import Testing

struct ServerConfigurationTests {
    @Test func defaultsMatchTheDocumentedOnes() throws {
        let configuration = try ServerConfiguration.load(environment: [:], arguments: [])
        #expect(configuration.databaseURL == nil)
        #expect(configuration.listen == "127.0.0.1:8080")
        #expect(configuration.delivery == "log")
        #expect(configuration.checkinMinSeconds == 60)
        #expect(configuration.migrate)
        #expect(!configuration.allowSuperuser)
    }

    @Test func aFlagOverridesItsEnvironmentVariable() throws {
        let configuration = try ServerConfiguration.load(
            environment: ["ROOST_LISTEN": "0.0.0.0:9000", "DATABASE_URL": "postgres://env/db", "ROOST_DB_POOL_SIZE": "4"],
            arguments: ["--listen", "127.0.0.1:7000", "--db-pool-size=6", "--no-migrate", "--allow-superuser"])
        #expect(configuration.listen == "127.0.0.1:7000")
        #expect(configuration.databaseURL == "postgres://env/db")
        #expect(configuration.databasePoolSize == 6)
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
