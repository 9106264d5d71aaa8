import Foundation
import RoostHTTP
import RoostPersistence

/// A reason `roost` cannot start, written as the one line an operator acts on.
public struct StartupError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }

    init(_ error: DatabaseError) {
        var line = error.message
        if let hint = error.hint { line += " (\(hint))" }
        description = line
    }
}

/// Opening the database at start: parse the URL, connect, refuse a superuser, migrate.
public enum DatabaseStartup {
    /// The pool for `roost serve` and the CLI, ready to use, and the migrations this start applied.
    /// Migrations run as the tables' owner (`migrationDatabaseURL`, else `databaseURL`), which
    /// then grants the serving role its row access; `serving` refuses a serving role that owns
    /// the tables unless `allowTableOwner`.
    public static func open(
        _ configuration: ServerConfiguration, log: Log, migrate: Bool, serving: Bool = false
    ) async throws -> (pool: ConnectionPool, applied: [Migration]) {
        guard let url = configuration.databaseURL, !url.isEmpty else {
            throw StartupError(
                "DATABASE_URL is not set: set it to a PostgreSQL URI (postgres://user:password@host:5432/db), or use scripts/run, which starts an embedded PostgreSQL")
        }
        let connection = ConnectionConfiguration(
            connectionString: url, connectTimeoutSeconds: configuration.databaseConnectTimeoutSeconds)
        do {
            try connection.validate()
        } catch let error as DatabaseError {
            throw StartupError(error)
        }
        let pool = ConnectionPool(
            configuration: connection,
            options: .init(
                maxConnections: configuration.databasePoolSize,
                acquireTimeout: .milliseconds(configuration.databaseAcquireTimeoutMilliseconds)))
        let migrations = migrate ? try loadMigrations(configuration) : []
        let allowSuperuser = configuration.allowSuperuser
        let owner = try configuration.migrationDatabaseURL.map { url in
            let owner = ConnectionConfiguration(connectionString: url, connectTimeoutSeconds: configuration.databaseConnectTimeoutSeconds)
            do {
                try owner.validate()
            } catch let error as DatabaseError {
                throw StartupError(error)
            }
            return owner
        }
        do {
            let (role, applied) = try await pool.withConnection { connection in
                let role = try connection.currentRole()
                guard migrate, !role.escapesRowSecurity || allowSuperuser else { return (role, [Migration]()) }
                guard let owner else {
                    do {
                        return (role, try Migrator(migrations: migrations).run(on: connection))
                    } catch let error as DatabaseError where error.code == .insufficientPrivilege {
                        // The usual cause: DATABASE_URL names the serving role, which owns nothing.
                        throw StartupError("PostgreSQL role \(role.name) may not create or change Roost's tables (\(error.message)): "
                                           + "set ROOST_MIGRATION_DATABASE_URL to the tables' owner, which migrates while \(role.name) serves, "
                                           + "or pass --no-migrate where another node migrates")
                    }
                }
                // Migrations as the owner, then the serving role's grants (new tables included).
                let ownerConnection = try PostgresConnection.connect(owner)
                let applied = try Migrator(migrations: migrations).run(on: ownerConnection)
                if try ownerConnection.currentRole().name != role.name { try ownerConnection.grantRuntimeAccess(to: role.name) }
                return (role, applied)
            }
            if serving, !configuration.allowTableOwner, try await pool.withConnection({ try $0.ownedTableCount() }) > 0 {
                pool.close()
                throw StartupError(
                    "refusing to serve as PostgreSQL role \(role.name): it owns Roost's tables, so it could switch row-level security off; serve as a role that owns nothing and migrate as the owner with ROOST_MIGRATION_DATABASE_URL (docs/SECURITY.md), or pass --allow-table-owner")
            }
            if role.escapesRowSecurity {
                guard allowSuperuser else {
                    pool.close()
                    throw StartupError(
                        "refusing to run as PostgreSQL role \(role.name): it is a superuser or has BYPASSRLS, which bypasses row-level security between tenants; connect as an ordinary role, or pass --allow-superuser")
                }
                log.warning("running as a role that bypasses row-level security", ["role": role.name])
            }
            // A database this Roost cannot serve from at all: say so and stop, rather than report
            // ready and answer 500 to everything. A schema that only lags (a rolling upgrade, this
            // node up before `roost migrate` ran) is served, with /readyz at 503 until it catches up.
            if serving, let needed = requiredSchema(configuration, loaded: migrate ? migrations : nil) {
                let have = try await pool.withConnection { try Migrator.schemaVersion(on: $0) }
                if have == 0 {
                    pool.close()
                    throw StartupError(
                        "the database has no Roost schema (migration 0 of \(needed)): run `roost migrate` (with ROOST_MIGRATION_DATABASE_URL set to the tables' owner), or start without --no-migrate")
                }
                if have < needed {
                    log.warning("the database schema lags this Roost: /readyz answers 503 until `roost migrate` has run",
                                ["schema": String(have), "needs": String(needed)])
                }
            }
            log.info("database ready", [
                "database": connection.redacted, "role": role.name,
                "migrations_applied": applied.map(\.fileName).joined(separator: ","),
            ])
            return (pool, applied)
        } catch let error as DatabaseError {
            pool.close()
            throw StartupError(error)
        }
    }

    /// The newest migration this Roost knows (what its code needs of the schema), from the
    /// migrations `loaded` or read from the folder; nil when no folder is found (then nothing is
    /// checked: a packaging without sql/ serves as before).
    public static func requiredSchema(_ configuration: ServerConfiguration, loaded: [Migration]? = nil) -> Int? {
        (loaded ?? (try? loadMigrations(configuration)))?.map(\.version).max()
    }

    /// The migrations folder: ROOST_MIGRATIONS_DIR, else `sql/` in the working directory or
    /// above the executable (a checkout's .build/…/roost), else /usr/share/roost/sql.
    static func loadMigrations(_ configuration: ServerConfiguration) throws -> [Migration] {
        let directory = try configuration.migrationsDirectory.map { URL(fileURLWithPath: $0) } ?? findMigrations()
        do {
            return try Migration.load(from: directory)
        } catch let error as DatabaseError {
            throw StartupError(error)
        }
    }

    private static func findMigrations() throws -> URL {
        guard let folder = ShippedFolder.find("sql", marker: "0001_initial_schema.sql") else {
            throw StartupError("cannot find the migrations folder (sql/); set ROOST_MIGRATIONS_DIR to it")
        }
        return folder
    }
}
