import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// docs/OPERATIONS.md's logical backup, run as written: `pg_dump` as a backup role that may read
/// every tenant's rows (BYPASSRLS and pg_read_all_data: as Roost's owner or serving role the dump
/// fails or holds no rows, since row security binds them), `pg_restore` into a fresh database
/// as a superuser, and `roost serve` from the restored database answering with every message.
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["TEST_SUPERUSER_DATABASE_URL"] != nil
                        && ProcessInfo.processInfo.environment["ROOST_TEST_PG_BINDIR"] != nil && TestDatabase.appURL != nil,
                        "needs TEST_SUPERUSER_DATABASE_URL and ROOST_TEST_PG_BINDIR (scripts/test sets them)"))
struct BackupTests {
    static let superuser = ProcessInfo.processInfo.environment["TEST_SUPERUSER_DATABASE_URL"] ?? ""
    static let bindir = ProcessInfo.processInfo.environment["ROOST_TEST_PG_BINDIR"] ?? ""

    /// The superuser's URL with another role and database (`postgresql:///db?host=…&user=…`).
    static func url(user: String, database: String) -> String {
        var components = URLComponents(string: superuser)!
        components.path = "/" + database
        components.queryItems = (components.queryItems ?? []).filter { $0.name != "user" } + [URLQueryItem(name: "user", value: user)]
        return components.string!
    }

    static func call(_ port: UInt16, _ method: String, _ path: String, _ body: String? = nil, token: String? = nil) async -> (Int, Any?) {
        let head = "\(method) \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + (token.map { "Authorization: Bearer \($0)\r\n" } ?? "")
            + (body.map { "Content-Type: application/json\r\nContent-Length: \($0.utf8.count)\r\n" } ?? "") + "\r\n" + (body ?? "")
        guard let answer = await offload({ exchange(port, head) }), let split = answer.range(of: "\r\n\r\n"),
              let status = Int(answer.split(separator: " ").dropFirst().first ?? "") else { return (0, nil) }
        return (status, try? JSONSerialization.jsonObject(with: Data(answer[split.upperBound...].utf8)))
    }

    @Test func theDocumentedBackupRestoresEveryMessageIntoAFreshDatabaseThatServes() async throws {
        try await TestDatabase.withScratchDatabaseAsync { source in
            let ownerURL = TestDatabase.configuration(database: source).connectionString
            let appURL = try #require(TestDatabase.appURL(for: ownerURL))
            let environment = ["PATH": "/usr/bin:/bin", "ROOST_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path,
                               "DATABASE_URL": appURL, "ROOST_MIGRATION_DATABASE_URL": ownerURL]
            #expect(try await Subprocess.run(roostBinary, ["migrate"], environment: environment).status == 0)
            let slug = "bk-\(UUID().uuidString.prefix(8).lowercased())"
            #expect(try await Subprocess.run(roostBinary, ["tenant", "create", slug, "--name", "Backup Row", "--registration", "open", "--no-migrate"],
                                             environment: environment).status == 0)

            // A street with a chat, written through the API.
            var serve = try await ServeProcess(databaseURL: ownerURL)
            let (registered, session) = await Self.call(serve.port, "POST", "/v1/auth/register",
                                                        #"{"tenant":"\#(slug)","email":"ann@example.org","password":"a long enough password","display_name":"Ann"}"#)
            #expect(registered == 201)
            let token = try #require((session as? [String: Any])?["token"] as? String)
            let group = try #require(((await Self.call(serve.port, "POST", "/v1/groups", #"{"name":"Elm"}"#, token: token)).1 as? [String: Any])?["id"] as? String)
            for index in 1...5 {
                let body = #"{"client_msg_id":"m\#(index)","kind":"chat","text":"message \#(index)"}"#
                #expect(await Self.call(serve.port, "POST", "/v1/groups/\(group)/messages", body, token: token).0 == 201)
            }
            serve.process.signal(SIGTERM)
            _ = await serve.process.wait()

            // The backup role, as OPERATIONS makes it (once, as a superuser).
            let admin = try PostgresConnection.connect(ConnectionConfiguration(connectionString: Self.url(user: "postgres", database: "postgres")))
            let backupRole = "roost_backup_" + UUID().uuidString.prefix(8).lowercased()
            try admin.run(script: "CREATE ROLE \(backupRole) LOGIN BYPASSRLS; GRANT pg_read_all_data TO \(backupRole)")
            let restored = "roost_restored_" + UUID().uuidString.prefix(8).lowercased()
            let dump = NSTemporaryDirectory() + "roost-backup-\(UUID().uuidString).dump"
            defer {
                unlink(dump)
                try? admin.run(script: "DROP DATABASE IF EXISTS \(restored) WITH (FORCE)")
                try? admin.run(script: "DROP ROLE IF EXISTS \(backupRole)")
            }
            let dumped = try await Subprocess.run(Self.bindir + "/pg_dump", ["--format=custom", "--file=\(dump)", "--dbname=\(Self.url(user: backupRole, database: source))"])
            #expect(dumped.status == 0, "\(dumped.output)")
            // Owned by Roost's owner role, as the first database was, so that it migrates there.
            let owner = try #require(URLComponents(string: ownerURL)?.queryItems?.first { $0.name == "user" }?.value)
            try admin.run(script: "CREATE DATABASE \(restored) OWNER \(owner)")
            let restore = try await Subprocess.run(Self.bindir + "/pg_restore", ["--exit-on-error", "--dbname=\(Self.url(user: "postgres", database: restored))", dump])
            #expect(restore.status == 0, "\(restore.output)")
            func messages(_ database: String) throws -> Int {
                let connection = try PostgresConnection.connect(ConnectionConfiguration(connectionString: Self.url(user: "postgres", database: database)))
                return try connection.query("SELECT count(*) AS n FROM messages").rows[0].decode(Int.self, "n")
            }
            #expect(try messages(source) == 5 && messages(restored) == 5)

            // Migrated already (nothing to apply), and served: the same session reads the same chat.
            let restoredOwner = TestDatabase.configuration(database: restored).connectionString
            let again = try await Subprocess.run(roostBinary, ["migrate"], environment: environment.merging([
                "DATABASE_URL": try #require(TestDatabase.appURL(for: restoredOwner)), "ROOST_MIGRATION_DATABASE_URL": restoredOwner]) { $1 })
            #expect(again.status == 0 && again.output.contains("database is up to date"), "\(again.output)")
            serve = try await ServeProcess(databaseURL: restoredOwner)
            let (read, page) = await Self.call(serve.port, "GET", "/v1/groups/\(group)/messages?limit=50", token: token)
            #expect(read == 200 && ((page as? [String: Any])?["items"] as? [[String: Any]])?.count == 5, "\(page ?? "nothing")")
            serve.process.signal(SIGTERM)
            _ = await serve.process.wait()
        }
    }
}
