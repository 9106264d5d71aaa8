import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

/// The built `roost` executable, beside this test bundle in the build folder.
let roostBinary: String = {
    let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let candidates = [
        bundleDirectory.appendingPathComponent("roost").path,
        bundleDirectory.deletingLastPathComponent().appendingPathComponent("roost").path,
    ]
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
}()

/// Runs `roost` with a clean environment plus `environment`.
private func roost(_ arguments: [String], environment: [String: String] = [:]) throws -> Subprocess.Outcome {
    var base = ["PATH": "/usr/bin:/bin", "ROOST_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path]
    base.merge(environment) { $1 }
    return try Subprocess.run(roostBinary, arguments, environment: base)
}

private func lines(_ text: String) -> [Substring] {
    text.split(separator: "\n", omittingEmptySubsequences: true)
}

struct StartupTests {
    @Test func theBinaryIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: roostBinary), "no roost at \(roostBinary)")
    }

    @Test func withoutADatabaseURLItSaysWhatToDoInOneLine() throws {
        let outcome = try roost(["migrate"])
        #expect(outcome.status == 1)
        #expect(lines(outcome.output).count == 1)
        #expect(outcome.output.hasPrefix("roost: error: DATABASE_URL is not set"))
    }

    @Test func aMalformedDatabaseURLIsOneClearLine() throws {
        let outcome = try roost(["migrate"], environment: ["DATABASE_URL": "postgres://[::1:oops/db"])
        #expect(outcome.status == 1)
        #expect(lines(outcome.output).count == 1)
        #expect(outcome.output.hasPrefix("roost: error: invalid database connection string"))
    }

    @Test func anUnreachableDatabaseIsOneClearLine() throws {
        let outcome = try roost(
            ["serve"], environment: ["DATABASE_URL": "postgresql:///roost?host=/nonexistent-roost&port=1"])
        #expect(outcome.status == 1)
        #expect(lines(outcome.output).count == 1)
        #expect(outcome.output.hasPrefix("roost: error: cannot connect to PostgreSQL"))
        #expect(!outcome.output.contains("Fatal error"))
    }

    @Test func anUnknownOptionIsAUsageError() throws {
        let outcome = try roost(["serve", "--no-such-flag"])
        #expect(outcome.status == 2)
        #expect(outcome.output == "roost: unknown option --no-such-flag; see roost serve --help\n")
    }

    @Test func serveHelpListsTheSettings() throws {
        let outcome = try roost(["serve", "--help"])
        #expect(outcome.status == 0)
        #expect(outcome.output.contains("ROOST_DB_POOL_SIZE"))
        #expect(outcome.output.contains("--allow-superuser"))
    }

    @Test(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
    func migrateThenTenantCommandsWork() throws {
        let environment = ["DATABASE_URL": TestDatabase.url!]
        let migrate = try roost(["migrate"], environment: environment)
        #expect(migrate.status == 0, "\(migrate.output)")
        let slug = "cli-\(UUID().uuidString.prefix(8).lowercased())"
        let created = try roost(["tenant", "create", slug, "--name", "Birch Close", "--registration", "invite_only"], environment: environment)
        #expect(created.status == 0, "\(created.output)")
        #expect(created.output.contains("created tenant \(slug)"))
        let again = try roost(["tenant", "create", slug, "--name", "Birch Close"], environment: environment)
        #expect(again.status == 1)
        #expect(again.output.contains("a tenant with slug '\(slug)' already exists"))
        let listed = try roost(["tenant", "list"], environment: environment)
        #expect(listed.output.contains("\(slug)\t"))
        #expect(listed.output.contains("invite_only\tBirch Close"))
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["TEST_SUPERUSER_DATABASE_URL"] != nil,
                   "needs TEST_SUPERUSER_DATABASE_URL (scripts/test sets it)"))
    func serveRefusesASuperuserUnlessAllowed() throws {
        let superuser = ProcessInfo.processInfo.environment["TEST_SUPERUSER_DATABASE_URL"]!
        let refused = try roost(["serve", "--no-migrate"], environment: ["DATABASE_URL": superuser])
        #expect(refused.status == 1)
        #expect(lines(refused.output).count == 1)
        #expect(refused.output.contains("refusing to run as PostgreSQL role postgres"))
        #expect(refused.output.contains("--allow-superuser"))
    }
}
