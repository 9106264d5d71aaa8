import Foundation
import RoostPersistence

/// The throwaway PostgreSQL that scripts/test starts: `TEST_DATABASE_URL` names it.
public enum TestDatabase {
    public static let url = ProcessInfo.processInfo.environment["TEST_DATABASE_URL"]
    public static var isConfigured: Bool { url != nil }
    /// The role `roost serve` runs as in the tests (owns nothing; scripts/test makes it).
    public static let appURL = ProcessInfo.processInfo.environment["TEST_APP_DATABASE_URL"]

    /// The serving role's URL for the database `ownerURL` names, or nil without an app role
    /// on that server (a scratch cluster of a test's own has none).
    public static func appURL(for ownerURL: String) -> String? {
        guard let appURL, var app = URLComponents(string: appURL), let owner = URLComponents(string: ownerURL) else { return nil }
        func server(_ url: URLComponents) -> [String?] {
            [url.host, url.port.map(String.init)] + ["host", "port"].map { name in url.queryItems?.first { $0.name == name }?.value }
        }
        guard server(app) == server(owner) else { return nil }
        app.path = owner.path
        return app.string
    }

    /// The repository's sql/ folder.
    public static let migrationsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("sql")

    public static func configuration(database: String? = nil, applicationName: String = "roost-test") -> ConnectionConfiguration {
        var url = TestDatabase.url!
        if let database, var components = URLComponents(string: url) {
            components.path = "/" + database
            url = components.string!
        }
        return ConnectionConfiguration(connectionString: url, applicationName: applicationName)
    }

    public static func connect(database: String? = nil) throws -> PostgresConnection {
        try PostgresConnection.connect(configuration(database: database))
    }

    /// A connection to the shared test database with every migration applied. Concurrent
    /// callers are serialised by the migrator's advisory lock.
    public static func migratedConnection() throws -> PostgresConnection {
        let connection = try connect()
        try Migrator(migrations: Migration.load(from: migrationsDirectory)).run(on: connection)
        return connection
    }

    /// A fresh name for a scratch database or schema: lower-case, no quoting needed.
    static func scratchName() -> String {
        "roost_scratch_" + UUID().lowercasedText.filter { $0 != "-" }
    }

    /// A table for one test, in a schema of its own, for a test that needs more than one
    /// session to see it (a TEMP table is its session's alone). Not in the shared schema:
    /// `roost serve`, which other tests start against this database, grants on every table
    /// there, and a table dropped while it lists them stops its start. `columns` is the
    /// table's column list; the name comes back schema-qualified, for `unsafeRaw:`.
    public static func makeScratchTable(_ columns: String, on connection: PostgresConnection) throws -> String {
        let schema = scratchName()
        try connection.run(script: "CREATE SCHEMA \(schema); CREATE TABLE \(schema).t (\(columns))")
        return "\(schema).t"
    }

    /// Drops a table `makeScratchTable` made, with its schema.
    public static func dropScratchTable(_ table: String, on connection: PostgresConnection) {
        let schema = table.prefix { $0 != "." }
        _ = try? connection.run(script: "DROP SCHEMA IF EXISTS \(schema) CASCADE")
    }

    /// A new migrated database on the test cluster, for a test whose background workers must not
    /// touch other tests' rows (or theirs its own); `dropScratch` removes it.
    public static func makeScratch() throws -> String {
        let name = scratchName()
        try connect().run(script: "CREATE DATABASE \"\(name)\"")
        try Migrator(migrations: Migration.load(from: migrationsDirectory)).run(on: connect(database: name))
        return name
    }

    public static func dropScratch(_ name: String) {
        _ = try? drop(name, on: connect())
    }

    /// Drops a scratch database, ending the sessions still on it. An autovacuum worker runs as
    /// no role, so ending one needs pg_signal_backend (scripts/test grants it); on a cluster
    /// without that grant, a plain DROP asks the worker to stop and waits for it.
    static func drop(_ name: String, on admin: PostgresConnection) throws {
        do {
            try admin.run(script: "DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)")
        } catch let error as DatabaseError where error.sqlState == "42501" {
            try admin.run(script: "DROP DATABASE IF EXISTS \"\(name)\"")
        }
    }

    /// Runs `body` against a database of its own, dropped afterwards.
    public static func withScratchDatabase<Result>(_ body: (String) throws -> Result) throws -> Result {
        let name = scratchName()
        let admin = try connect()
        try admin.run(script: "CREATE DATABASE \"\(name)\"")
        let result: Result
        do {
            result = try body(name)
        } catch {
            try drop(name, on: admin)
            throw error
        }
        try drop(name, on: admin)
        return result
    }

    /// The async twin of `withScratchDatabase`.
    public static func withScratchDatabaseAsync(_ body: @Sendable (String) async throws -> Void) async throws {
        let name = scratchName()
        let admin = try connect()
        try admin.run(script: "CREATE DATABASE \"\(name)\"")
        do {
            try await body(name)
        } catch {
            try drop(name, on: admin)
            throw error
        }
        try drop(name, on: admin)
    }
}
