import Foundation
import RoostPersistence

/// What the `roost` executable does; it only parses arguments and calls these.
public enum RoostCommands {
    /// `roost serve`: open and migrate the database, then serve until SIGINT/SIGTERM.
    public static func serve(_ configuration: ServerConfiguration) async throws {
        let log = Log(level: configuration.logLevel)
        let (pool, _) = try await DatabaseStartup.open(configuration, log: log, migrate: configuration.migrate)
        defer { pool.close() }
        log.warning(
            "the HTTP and WebSocket server is not built yet (issue #4); the database is migrated and ready. Ctrl-C stops.",
            ["listen": configuration.listen])
        let signal = await ShutdownSignal.wait()
        log.info("shutting down", ["signal": String(signal)])
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
        guard slug.range(of: "^[a-z0-9-]{2,40}$", options: .regularExpression) != nil else {
            throw ConfigurationError("tenant slug must be 2 to 40 of a-z, 0-9 and '-', not '\(slug)'")
        }
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
