import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct MigratorTests {
    let migrations: [Migration]

    init() throws {
        migrations = try Migration.load(from: TestDatabase.migrationsDirectory)
    }

    @Test func theRepositoryMigrationsAreNumberedInOrder() {
        #expect(!migrations.isEmpty)
        #expect(migrations.map(\.version) == Array(1...migrations.count))
    }

    @Test func aSecondRunAppliesNothing() throws {
        try TestDatabase.withScratchDatabase { database in
            let connection = try TestDatabase.connect(database: database)
            let first = try Migrator(migrations: migrations).run(on: connection)
            #expect(first == migrations)
            let second = try Migrator(migrations: migrations).run(on: connection)
            #expect(second.isEmpty)
            let recorded = try Migrator(migrations: migrations).appliedChecksums(on: connection)
            #expect(recorded == Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0.checksum) }))
        }
    }

    @Test func concurrentRunnersApplyEachFileOnce() async throws {
        let migrations = self.migrations
        try await TestDatabase.withScratchDatabaseAsync { database in
            let results = try await withThrowingTaskGroup(of: [Migration].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        let connection = try TestDatabase.connect(database: database)
                        return try Migrator(migrations: migrations).run(on: connection)
                    }
                }
                return try await group.reduce(into: [[Migration]]()) { $0.append($1) }
            }
            #expect(results.map(\.count).reduce(0, +) == migrations.count)
            #expect(results.filter { !$0.isEmpty }.count == 1)
            let connection = try TestDatabase.connect(database: database)
            let rows = try connection.query("SELECT count(*) AS n FROM roost_schema_migrations").rows[0]
            #expect(try rows.decode(Int.self, "n") == migrations.count)
        }
    }

    @Test func anEditedAppliedFileIsRefused() throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("roost-mig-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "CREATE TABLE porch (id int);".write(to: folder.appendingPathComponent("0001_porch.sql"), atomically: true, encoding: .utf8)
        try "CREATE TABLE gate (id int);".write(to: folder.appendingPathComponent("0002_gate.sql"), atomically: true, encoding: .utf8)

        try TestDatabase.withScratchDatabase { database in
            let connection = try TestDatabase.connect(database: database)
            #expect(try Migrator(migrations: Migration.load(from: folder)).run(on: connection).count == 2)

            try "CREATE TABLE porch (id bigint);".write(
                to: folder.appendingPathComponent("0001_porch.sql"), atomically: true, encoding: .utf8)
            try "CREATE TABLE shed (id int);".write(to: folder.appendingPathComponent("0003_shed.sql"), atomically: true, encoding: .utf8)
            #expect {
                try Migrator(migrations: Migration.load(from: folder)).run(on: connection)
            } throws: { error in
                let error = error as? DatabaseError
                return error?.code == .migration && error!.message.contains("0001_porch.sql was edited")
            }
            // Nothing after the refusal was applied.
            let shed = try connection.query("SELECT to_regclass('shed') IS NULL AS missing").rows[0]
            #expect(try shed.decode(Bool.self, "missing"))
        }
    }

    @Test func aFailingMigrationIsRolledBackAndNamed() throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("roost-mig-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "CREATE TABLE half (id int); SELECT no_such_function();".write(
            to: folder.appendingPathComponent("0001_half.sql"), atomically: true, encoding: .utf8)
        try TestDatabase.withScratchDatabase { database in
            let connection = try TestDatabase.connect(database: database)
            #expect {
                try Migrator(migrations: Migration.load(from: folder)).run(on: connection)
            } throws: { error in
                (error as? DatabaseError)?.message.hasPrefix("migration 0001_half.sql failed") == true
            }
            let half = try connection.query("SELECT to_regclass('half') IS NULL AS missing").rows[0]
            #expect(try half.decode(Bool.self, "missing"))
        }
    }

    /// 0023 moves each group's event counter into `group_seqs`: a group written before it
    /// carries on from its own last seq, and deleting it still deletes its events.
    @Test func groupCountersMovedOutOfGroupsKeepTheirSeqs() throws {
        let before = migrations.filter { $0.version < 23 }
        try TestDatabase.withScratchDatabase { database in
            let connection = try TestDatabase.connect(database: database)
            try Migrator(migrations: before).run(on: connection)
            let tenant = try TenantStore().create(slug: "counted", name: "Counted", registration: .open, on: connection).id
            let (busy, quiet) = (UUID(), UUID())
            try connection.withTenantTransaction(tenant) { connection in
                try connection.query("""
                    INSERT INTO groups (tenant_id, id, name, last_seq) VALUES (\(tenant), \(busy), 'Busy', 7), (\(tenant), \(quiet), 'Quiet', 0)
                    """)
                try connection.query("""
                    INSERT INTO group_events (tenant_id, group_id, seq, event) SELECT \(tenant), \(busy), s, 'member.joined' FROM generate_series(1, 7) s
                    """)
            }
            #expect(try Migrator(migrations: migrations).run(on: connection).map(\.version) == Array(23...migrations.count))
            try connection.withTenantTransaction(tenant) { connection in
                let counters = try connection.query("SELECT group_id, last_seq FROM group_seqs").rows
                    .map { (try $0.decode(UUID.self, "group_id"), try $0.decode(Int64.self, "last_seq")) }
                #expect(Dictionary(uniqueKeysWithValues: counters) == [busy: 7, quiet: 0])
                let appended = try GroupEventLog().append(tenant: tenant, group: busy, event: .memberJoined, actorType: nil, actorID: nil,
                                                          data: RawJSON("{}"), on: connection)
                #expect(appended.seq == 8)
                #expect(try GroupStore().group(id: busy, on: connection)?.lastSeq == 8)
                try GroupStore().delete(group: busy, on: connection)
                let left = try connection.query("SELECT (SELECT count(*) FROM group_events) AS events, (SELECT count(*) FROM group_seqs) AS counters")
                    .rows[0]
                #expect(try left.decode(Int.self, "events") == 0 && left.decode(Int.self, "counters") == 1)
            }
        }
    }

    @Test func misnamedFilesAreRefused() throws {
        for name in ["1_short.sql", "0001-dash.sql", "0001_Upper.sql", "abcd_x.sql"] {
            let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("roost-mig-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            try "SELECT 1;".write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
            #expect(throws: DatabaseError.self) { try Migration.load(from: folder) }
        }
    }
}

