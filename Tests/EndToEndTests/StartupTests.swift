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
private func roost(_ arguments: [String], environment: [String: String] = [:]) async throws -> Subprocess.Outcome {
    var base = ["PATH": "/usr/bin:/bin", "ROOST_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path]
    base.merge(environment) { $1 }
    return try await Subprocess.run(roostBinary, arguments, environment: base)
}

private func lines(_ text: String) -> [Substring] {
    text.split(separator: "\n", omittingEmptySubsequences: true)
}

struct StartupTests {
    @Test func theBinaryIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: roostBinary), "no roost at \(roostBinary)")
    }

    @Test func withoutADatabaseURLItSaysWhatToDoInOneLine() async throws {
        let outcome = try await roost(["migrate"])
        #expect(outcome.status == 1)
        #expect(lines(outcome.output).count == 1)
        #expect(outcome.output.hasPrefix("roost: error: DATABASE_URL is not set"))
    }

    @Test func aMalformedDatabaseURLIsOneClearLine() async throws {
        let outcome = try await roost(["migrate"], environment: ["DATABASE_URL": "postgres://[::1:oops/db"])
        #expect(outcome.status == 1)
        #expect(lines(outcome.output).count == 1)
        #expect(outcome.output.hasPrefix("roost: error: invalid database connection string"))
    }

    @Test func anUnreachableDatabaseIsOneClearLine() async throws {
        let outcome = try await roost(
            ["serve"], environment: ["DATABASE_URL": "postgresql:///roost?host=/nonexistent-roost&port=1"])
        #expect(outcome.status == 1)
        #expect(lines(outcome.output).count == 1)
        #expect(outcome.output.hasPrefix("roost: error: cannot connect to PostgreSQL"))
        #expect(!outcome.output.contains("Fatal error"))
    }

    @Test func anUnknownOptionIsAUsageError() async throws {
        let outcome = try await roost(["serve", "--no-such-flag"])
        #expect(outcome.status == 2)
        #expect(outcome.output == "roost: unknown option --no-such-flag; see roost serve --help\n")
    }

    @Test func serveHelpListsTheSettings() async throws {
        let outcome = try await roost(["serve", "--help"])
        #expect(outcome.status == 0)
        #expect(outcome.output.contains("ROOST_DB_POOL_SIZE"))
        #expect(outcome.output.contains("--allow-superuser"))
    }

    @Test func everySubcommandHasHelpAndBadUsageIsOneLineWithStatus2() async throws {
        for (arguments, expected) in [(["tenant", "--help"], "--registration open|invite_only"), (["tenant", "create", "-h"], "roost tenant create SLUG"),
                                      (["outbox", "--help"], "roost outbox retry ID"), (["migrate", "--help"], "Usage: roost migrate"),
                                      (["feed", "--help"], "roost feed add URL --tenant"),
                                      (["--help"], "outbox list --failed")] {
            let outcome = try await roost(arguments)
            #expect(outcome.status == 0 && outcome.output.contains(expected), "roost \(arguments.joined(separator: " ")): \(outcome.output)")
            // Each command that opens the database lists those options with variable and default.
            if arguments != ["--help"] {
                #expect(outcome.output.contains("--database-url URL") && outcome.output.contains("DATABASE_URL")
                        && outcome.output.contains("ROOST_DB_CONNECT_TIMEOUT_S") && outcome.output.contains("(default: 5)"),
                        "roost \(arguments.joined(separator: " ")): \(outcome.output)")
            }
        }
        for arguments in [["tenant", "frobnicate"], ["outbox"], ["outbox", "list"], ["outbox", "list", "--failed", "--bogus"], ["frobnicate"],
                          ["tenant", "create", "ok-slug", "--name"], ["feed"], ["feed", "add"], ["feed", "add", "https://w.example/f"],
                          ["feed", "add", "https://w.example/f", "--all", "--tenant", "x"], ["feed", "add", "https://w.example/f", "--all", "--poll-s", "soon"]] {
            let outcome = try await roost(arguments)
            #expect(outcome.status == 2 && lines(outcome.output).count == 1, "roost \(arguments.joined(separator: " ")): \(outcome.status) \(outcome.output)")
        }
    }

    @Test(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
    func migrateThenTenantCommandsWork() async throws {
        let environment = ["DATABASE_URL": TestDatabase.url!]
        let migrate = try await roost(["migrate"], environment: environment)
        #expect(migrate.status == 0, "\(migrate.output)")
        let slug = "cli-\(UUID().uuidString.prefix(8).lowercased())"
        let created = try await roost(["tenant", "create", slug, "--name", "Birch Close", "--registration", "invite_only"], environment: environment)
        #expect(created.status == 0, "\(created.output)")
        #expect(created.output.contains("created tenant \(slug)"))
        let again = try await roost(["tenant", "create", slug, "--name", "Birch Close"], environment: environment)
        #expect(again.status == 1)
        #expect(again.output.contains("a tenant with slug '\(slug)' already exists"))
        let listed = try await roost(["tenant", "list"], environment: environment)
        #expect(listed.output.contains("\(slug)\t"))
        #expect(listed.output.contains("invite_only\tBirch Close"))
    }

    /// `roost feed`: add (checked as the operator API checks), list, poll, remove. The URL leads
    /// nowhere (port 9 of loopback), so a server of another test that polls it meanwhile writes nothing.
    @Test(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
    func feedCommandsAddListPollAndRemove() async throws {
        let environment = ["DATABASE_URL": TestDatabase.url!]
        let slug = "feed-\(UUID().uuidString.prefix(8).lowercased())"
        #expect(try await roost(["tenant", "create", slug, "--name", "Fen Row"], environment: environment).status == 0)
        let url = "http://127.0.0.1:9/\(slug).atom"
        let short = try await roost(["feed", "add", url, "--tenant", slug, "--poll-s", "30"], environment: environment)
        #expect(short.status == 2 && short.output.contains("--poll-s is 120 to 86400"), "\(short.output)")
        let unknown = try await roost(["feed", "add", url, "--tenant", "no-such-\(slug)"], environment: environment)
        #expect(unknown.status == 1 && unknown.output.contains("no tenant has the slug"), "\(unknown.output)")
        let added = try await roost(["feed", "add", url, "--tenant", slug, "--name", "Fen warnings", "--poll-s", "600"], environment: environment)
        #expect(added.status == 0 && added.output.contains("(Fen warnings), polled every 600 s for \(slug)"), "\(added.output)")
        let id = try #require(added.output.split(separator: " ").dropFirst(2).first.map(String.init))
        #expect(try await roost(["feed", "add", url, "--all"], environment: environment).output.contains("is configured already"))
        let listed = try await roost(["feed", "list"], environment: environment)
        #expect(listed.output.contains("\(id)\t600\t\(slug)\t\(url)\t"), "\(listed.output)")
        #expect(try await roost(["feed", "poll", id], environment: environment).output.contains("is polled at the next round"))
        #expect(try await roost(["feed", "remove", id], environment: environment).output.contains("removed feed \(id)"))
        let gone = try await roost(["feed", "remove", id], environment: environment)
        #expect(gone.status == 1 && gone.output.contains("no feed"))
        #expect(try await roost(["feed", "poll", "not-a-uuid"], environment: environment).status == 2)
    }

    @Test(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
    func tenantUpdateSwitchesRegistration() async throws {
        let environment = ["DATABASE_URL": TestDatabase.url!]
        let slug = "upd-\(UUID().uuidString.prefix(8).lowercased())"
        #expect(try await roost(["tenant", "create", slug, "--name", "Ash Court", "--registration", "invite_only"], environment: environment).status == 0)
        let opened = try await roost(["tenant", "update", slug, "--registration", "open"], environment: environment)
        #expect(opened.status == 0 && opened.output.contains("registration open"), "\(opened.output)")
        let setup = try TestDatabase.migratedConnection()
        #expect(try TenantStore().find(slug: slug, on: setup)?.registration == .open)
        #expect(try await roost(["tenant", "update", slug, "--registration", "sometimes"], environment: environment).status == 2)
        #expect(try await roost(["tenant", "update", slug], environment: environment).status == 2)
        let missing = try await roost(["tenant", "update", "no-such-\(slug)", "--name", "X"], environment: environment)
        #expect(missing.status == 1 && missing.output.contains("no tenant has slug"))
    }

    @Test(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
    func outboxCommandsListAndRetryFailedDeliveries() async throws {
        let environment = ["DATABASE_URL": TestDatabase.url!]
        let setup = try TestDatabase.migratedConnection()
        let tenant = try TenantStore().create(slug: "obx-\(UUID().uuidString.prefix(8).lowercased())", name: "Outbox", registration: .open, on: setup)
        let id = try setup.withTenantTransaction(tenant.id) { connection in
            let id = try OutboxStore().enqueue(tenant: tenant.id, channel: .email, recipient: "gone@example.org", template: .bridgeOffline,
                                               data: RawJSON("{}"), on: connection)
            try OutboxStore().record([DeliveryRecord(id: id, step: .retry(error: "webhook answered 500", retryIn: 0))], maxAttempts: 1, on: connection)
            return id
        }
        let text = id.uuidString.lowercased()
        let listed = try await roost(["outbox", "list", "--failed"], environment: environment)
        #expect(listed.status == 0)
        let line = lines(listed.output).first { $0.hasPrefix(text) }
        #expect(line == "\(text)\t\(tenant.slug)\temail\tbridge_offline\t1\twebhook answered 500")
        #expect(!listed.output.contains("gone@example.org"), "the list shows that a delivery failed, not to whom")

        let retried = try await roost(["outbox", "retry", text], environment: environment)
        #expect(retried.status == 0 && retried.output.contains("\(text): queued again"), "\(retried.output)")
        let (status, attempts, queued) = try setup.withTenantTransaction(tenant.id) { connection in
            let row = try connection.query("""
                SELECT status, attempts, (SELECT count(*) FROM outbox_jobs WHERE outbox_id = o.id) AS queued FROM outbox o WHERE id = \(id)
                """).rows[0]
            return (try row.decode(String.self, "status"), try row.decode(Int.self, "attempts"), try row.decode(Int.self, "queued"))
        }
        #expect(status == "pending" && attempts == 0 && queued == 1)
        let again = try await roost(["outbox", "retry", text], environment: environment)
        #expect(again.status == 1 && again.output.contains("no failed delivery"))
        #expect(try await roost(["outbox", "retry", "not-a-uuid"], environment: environment).status == 2)
        #expect(try await roost(["outbox", "list"], environment: environment).status == 2)
        // Leave nothing due for other tests' workers.
        try setup.withTenantTransaction(tenant.id) { try OutboxStore().dropJobs([id], on: $0) }
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["TEST_SUPERUSER_DATABASE_URL"] != nil,
                   "needs TEST_SUPERUSER_DATABASE_URL (scripts/test sets it)"))
    func serveRefusesASuperuserUnlessAllowed() async throws {
        let superuser = ProcessInfo.processInfo.environment["TEST_SUPERUSER_DATABASE_URL"]!
        let refused = try await roost(["serve", "--no-migrate"], environment: ["DATABASE_URL": superuser])
        #expect(refused.status == 1)
        #expect(lines(refused.output).count == 1)
        #expect(refused.output.contains("refusing to run as PostgreSQL role postgres"))
        #expect(refused.output.contains("--allow-superuser"))
    }

    @Test(.enabled(if: TestDatabase.appURL != nil, "needs TEST_APP_DATABASE_URL (scripts/test sets it)"))
    func serveRefusesATableOwnerAndServesAsARoleThatOwnsNothing() async throws {
        try await TestDatabase.withScratchDatabaseAsync { database in
            let ownerURL = TestDatabase.configuration(database: database).connectionString
            let appURL = try #require(TestDatabase.appURL(for: ownerURL))
            // The owner alone: refused, with what to do instead.
            let refused = try await roost(["serve", "--listen", "127.0.0.1:0", "--metrics-listen", "off"], environment: ["DATABASE_URL": ownerURL])
            #expect(refused.status == 1)
            #expect(refused.output.contains("it owns Roost's tables") && refused.output.contains("ROOST_MIGRATION_DATABASE_URL"))
            // Migrated by the owner, the app role gets rows and nothing else.
            let migrated = try await roost(["migrate"], environment: ["DATABASE_URL": appURL, "ROOST_MIGRATION_DATABASE_URL": ownerURL])
            #expect(migrated.status == 0, "\(migrated.output)")
            let app = try PostgresConnection.connect(ConnectionConfiguration(connectionString: appURL))
            #expect(try app.ownedTableCount() == 0)
            let tenant = try TenantStore().create(slug: "least-\(UUID().uuidString.prefix(8).lowercased())", name: "Least", registration: .open, on: app)
            #expect(try app.withTenantTransaction(tenant.id) { try $0.query("SELECT count(*) AS n FROM users").rows[0].decode(Int.self, "n") } == 0)
            // Not even an injected statement switches row security off or reads across tenants.
            for statement in ["ALTER TABLE users NO FORCE ROW LEVEL SECURITY", "ALTER TABLE users DISABLE ROW LEVEL SECURITY",
                              "DROP POLICY tenant_isolation ON users", "CREATE TABLE intruder (x int)",
                              "INSERT INTO roost_schema_migrations (version, name, checksum) VALUES (9999, 'x', 'x')"] {
                #expect(throws: DatabaseError.self, "\(statement)") { try app.run(script: statement) }
            }
            #expect(throws: DatabaseError.self) { try app.withTransaction { try $0.run(script: "SET LOCAL row_security = off; SELECT * FROM users") } }
            #expect(try app.query("SELECT count(*) AS n FROM users").rows[0].decode(Int.self, "n") == 0)  // no tenant set: no rows
        }
    }

    /// A database with no Roost schema is not served (`--no-migrate` on it stops at start, saying
    /// what to run); one whose schema only lags this Roost (a rolling upgrade) is served with
    /// /readyz at 503, naming both versions, until `roost migrate` has run.
    @Test(.enabled(if: TestDatabase.appURL != nil, "needs TEST_APP_DATABASE_URL (scripts/test sets it)"))
    func aMissingSchemaStopsServeAndALaggingOneKeepsReadyzAt503UntilMigrated() async throws {
        try await TestDatabase.withScratchDatabaseAsync { database in
            let ownerURL = TestDatabase.configuration(database: database).connectionString
            do {
                _ = try await ServeProcess(["--no-migrate"], databaseURL: ownerURL)
                Issue.record("serve --no-migrate started on an empty database")
            } catch let error as SubprocessError {
                #expect(error.description.contains("the database has no Roost schema (migration 0 of") && error.description.contains("roost migrate"),
                        "\(error)")
            }
            // Every migration but the newest, as a node of the previous version would have left it.
            let all = try FileManager.default.contentsOfDirectory(atPath: TestDatabase.migrationsDirectory.path).filter { $0.hasSuffix(".sql") }.sorted()
            let older = FileManager.default.temporaryDirectory.appendingPathComponent("roost-older-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: older, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: older) }
            for name in all.dropLast() {
                try FileManager.default.copyItem(at: TestDatabase.migrationsDirectory.appendingPathComponent(name), to: older.appendingPathComponent(name))
            }
            let appURL = try #require(TestDatabase.appURL(for: ownerURL))
            let migrate = ["DATABASE_URL": appURL, "ROOST_MIGRATION_DATABASE_URL": ownerURL]
            #expect(try await roost(["migrate"], environment: migrate.merging(["ROOST_MIGRATIONS_DIR": older.path]) { $1 }).status == 0)
            let newest = try #require(Int(all.last!.prefix(4)))
            let serve = try await ServeProcess(["--no-migrate"], databaseURL: ownerURL)
            #expect(serve.process.output.contains("the database schema lags this Roost"))
            let port = serve.port
            let lagging = await offload { exchange(port, "GET /readyz HTTP/1.1\r\nConnection: close\r\n\r\n") }
            #expect(lagging?.hasPrefix("HTTP/1.1 503") == true, "\(lagging ?? "no answer")")
            #expect(lagging?.contains("the database schema is at migration \(newest - 1) and this Roost needs \(newest): run roost migrate") == true)
            #expect(try await roost(["migrate"], environment: migrate).status == 0)
            let ready = await offload { exchange(port, "GET /readyz HTTP/1.1\r\nConnection: close\r\n\r\n") }
            #expect(ready?.contains(#"{"status":"ready"}"#) == true, "\(ready ?? "no answer")")
            serve.process.signal(SIGTERM)
            #expect(await serve.process.wait() == 0)
        }
    }

    /// Settings that cannot be what the operator meant stop `roost serve` with what to do: a
    /// short operator token, SMTP settings with email going elsewhere, a sender that is no
    /// address, and a serving role asked to migrate without the tables' owner.
    @Test(.enabled(if: TestDatabase.appURL != nil, "needs TEST_APP_DATABASE_URL (scripts/test sets it)"))
    func settingsThatCannotBeMeantSayWhatToDo() async throws {
        let base = ["DATABASE_URL": TestDatabase.appURL!, "ROOST_MIGRATION_DATABASE_URL": TestDatabase.url!]
        let serve = ["serve", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--no-outbox-worker"]
        let short = try await roost(serve, environment: base.merging(["ROOST_ADMIN_TOKEN": "change-me"]) { $1 })
        #expect(short.status == 2 && short.output.contains("ROOST_ADMIN_TOKEN must be at least 32 characters"), "\(short.output)")
        let stray = try await roost(serve, environment: base.merging(["ROOST_SMTP_URL": "smtp://relay.example.org"]) { $1 })
        #expect(stray.status == 2 && stray.output.contains("ROOST_SMTP_URL is set but email leaves by log") && stray.output.contains("ROOST_EMAIL=smtp"),
                "\(stray.output)")
        let sender = try await roost(serve, environment: base.merging(["ROOST_EMAIL": "smtp", "ROOST_SMTP_URL": "smtp://relay.example.org",
                                                                       "ROOST_SMTP_FROM": "the street's watch"]) { $1 })
        #expect(sender.status == 2 && sender.output.contains("ROOST_SMTP_FROM 'the street's watch' is not an email address"), "\(sender.output)")
        try await TestDatabase.withScratchDatabaseAsync { database in
            let ownerURL = TestDatabase.configuration(database: database).connectionString
            let appURL = try #require(TestDatabase.appURL(for: ownerURL))
            let alone = try await roost(serve, environment: ["DATABASE_URL": appURL])
            #expect(alone.status == 1 && alone.output.contains("may not create or change Roost's tables")
                    && alone.output.contains("set ROOST_MIGRATION_DATABASE_URL to the tables' owner"), "\(alone.output)")
        }
    }

    /// `roost sql --tenant SLUG` opens psql as the serving role with the tenant set: its rows,
    /// and no other tenant's (plain psql as that role reads every table empty).
    @Test(.enabled(if: TestDatabase.appURL != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/psql"),
                   "needs TEST_APP_DATABASE_URL and psql"))
    func sqlOpensPsqlWithTheTenantSet() async throws {
        let setup = try TestDatabase.migratedConnection()
        let tenant = try TenantStore().create(slug: "sql-\(UUID().uuidString.prefix(8).lowercased())", name: "Psql Row", registration: .open, on: setup)
        try setup.withTenantTransaction(tenant.id) { connection in
            for name in ["Ann", "Ben"] {
                _ = try UserStore().create(tenant: tenant.id, email: "\(name.lowercased())@example.org", phone: nil, passwordHash: "x",
                                           displayName: name, on: connection)
            }
        }
        let environment = ["DATABASE_URL": TestDatabase.appURL!]
        // The serving role's grants, as a start of Roost gives them.
        #expect(try await roost(["migrate"], environment: environment.merging(["ROOST_MIGRATION_DATABASE_URL": TestDatabase.url!]) { $1 }).status == 0)
        let counted = try await roost(["sql", "--tenant", tenant.slug, "--", "-At", "-c", "SELECT string_agg(display_name, ',' ORDER BY display_name) FROM users"],
                                      environment: environment)
        #expect(counted.status == 0 && counted.output.trimmingCharacters(in: .whitespacesAndNewlines) == "Ann,Ben", "\(counted.output)")
        let unknown = try await roost(["sql", "--tenant", "no-such-\(tenant.slug)"], environment: environment)
        #expect(unknown.status == 1 && unknown.output.contains("no tenant has the slug"))
    }
}
