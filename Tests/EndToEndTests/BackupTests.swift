import Foundation
import RoostPersistence
import RoostTestSupport
import Synchronization
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

    /// A scratch database as an operator makes it: `roost migrate`, then `roost tenant create`
    /// (an open tenant): the commands' environment and the tenant's slug.
    static func migratedWithTenant(_ database: String) async throws -> (environment: [String: String], slug: String) {
        let ownerURL = TestDatabase.configuration(database: database).connectionString
        let environment = ["PATH": "/usr/bin:/bin", "ROOST_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path,
                           "DATABASE_URL": try #require(TestDatabase.appURL(for: ownerURL)), "ROOST_MIGRATION_DATABASE_URL": ownerURL]
        #expect(try await Subprocess.run(roostBinary, ["migrate"], environment: environment).status == 0)
        let slug = "bk-\(UUID().uuidString.prefix(8).lowercased())"
        #expect(try await Subprocess.run(roostBinary, ["tenant", "create", slug, "--name", "Backup Row", "--registration", "open", "--no-migrate"],
                                         environment: environment).status == 0)
        return (environment, slug)
    }

    @Test func theDocumentedBackupRestoresEveryMessageIntoAFreshDatabaseThatServes() async throws {
        try await TestDatabase.withScratchDatabaseAsync { source in
            let ownerURL = TestDatabase.configuration(database: source).connectionString
            let (environment, slug) = try await Self.migratedWithTenant(source)

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

            let backup = try LogicalBackup()
            defer { backup.drop() }
            let dumped = try await backup.dump(source)
            #expect(dumped.status == 0, "\(dumped.output)")
            let restore = try await backup.restore(ownedBy: ownerURL)
            #expect(restore.status == 0, "\(restore.output)")
            let restored = backup.restored
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

    /// The backup taken while a neighbour keeps posting: the dump is one snapshot, so the restored
    /// group's log is a prefix with no gap (every message committed before the dump began, at
    /// least), the members and the photo with its file are back, and a stream on the restored
    /// server resumes from a cursor with exactly the events after it.
    @Test func aBackupTakenUnderLiveTrafficRestoresAGaplessLogAndAStreamResumesFromItsCursor() async throws {
        try await TestDatabase.withScratchDatabaseAsync { source in
            let ownerURL = TestDatabase.configuration(database: source).connectionString
            let slug = try await Self.migratedWithTenant(source).slug
            var serve = try await ServeProcess(databaseURL: ownerURL)
            let port = serve.port
            func register(_ name: String) async throws -> (token: String, id: String) {
                let body = #"{"tenant":"\#(slug)","email":"\#(name)@example.org","password":"a long enough password","display_name":"\#(name)"}"#
                let user = try #require(await Self.call(port, "POST", "/v1/auth/register", body).1 as? [String: Any])
                return (try #require(user["token"] as? String), try #require((user["user"] as? [String: Any])?["id"] as? String))
            }
            let ann = try await register("ann"), bob = try await register("bob")
            let group = try #require(((await Self.call(port, "POST", "/v1/groups", #"{"name":"Elm"}"#, token: ann.token)).1 as? [String: Any])?["id"] as? String)
            _ = try #require(((await Self.call(port, "POST", "/v1/groups", #"{"name":"Ash"}"#, token: bob.token)).1 as? [String: Any])?["id"] as? String)
            // A photo, uploaded and posted.
            let photo = MediaSamples.jpeg()
            let upload = try TestClient(port: port)
            upload.send(Array("POST /v1/media HTTP/1.1\r\nAuthorization: Bearer \(ann.token)\r\nContent-Type: image/jpeg\r\nContent-Length: \(photo.count)\r\n\r\n".utf8) + photo)
            let uploaded = try #require(await upload.readResponse())
            let media = try #require((try? JSONSerialization.jsonObject(with: Data(uploaded.body)) as? [String: Any])?["id"] as? String, "\(uploaded.text)")
            #expect(await Self.call(port, "POST", "/v1/groups/\(group)/messages",
                                    #"{"client_msg_id":"photo","kind":"chat","text":"the van","attachments":["\#(media)"]}"#, token: ann.token).0 == 201)

            func count(_ database: String, _ sql: String) throws -> Int {
                let connection = try PostgresConnection.connect(ConnectionConfiguration(connectionString: Self.url(user: "postgres", database: database)))
                return try connection.query(SQLQuery(sql, binds: [])).rows[0].decode(Int.self, "n")
            }
            let tables = ["users", "memberships", "media", "media_blobs", "media_links"]
            let before = try tables.map { try count(source, "SELECT count(*) AS n FROM \($0)") }
            let postedBefore = try count(source, "SELECT count(*) AS n FROM messages")

            // Ann keeps posting while the dump runs.
            let posting = LiveSwitch()
            let poster = Task {
                var posted = 0
                while posting.on.load(ordering: .relaxed) {
                    posted += 1
                    let body = #"{"client_msg_id":"live-\#(posted)","kind":"chat","text":"live \#(posted)"}"#
                    guard await Self.call(port, "POST", "/v1/groups/\(group)/messages", body, token: ann.token).0 == 201 else { break }
                }
                return posted
            }
            // At least one post lands before the dump starts, so the dump runs under traffic.
            #expect(try await Poll.until(every: .milliseconds(10)) { try count(source, "SELECT count(*) AS n FROM messages") > postedBefore })
            let backup = try LogicalBackup()
            defer { backup.drop() }
            let committedBeforeDump = try count(source, "SELECT count(*) AS n FROM messages")
            let dumped = try await backup.dump(source)
            posting.on.store(false, ordering: .relaxed)
            let posted = await poster.value
            #expect(dumped.status == 0, "\(dumped.output)")
            serve.process.signal(SIGTERM)
            _ = await serve.process.wait()

            let restore = try await backup.restore(ownedBy: ownerURL)
            #expect(restore.status == 0, "\(restore.output)")
            let restored = backup.restored
            #expect(try tables.map { try count(restored, "SELECT count(*) AS n FROM \($0)") } == before, "members, media and files all back")
            let kept = try count(restored, "SELECT count(*) AS n FROM messages")
            #expect(kept >= committedBeforeDump && kept <= postedBefore + posted, "\(kept) messages kept of \(postedBefore + posted)")
            let gid = try #require(UUID(uuidString: group))
            let last = try count(restored, "SELECT last_seq AS n FROM group_seqs WHERE group_id = '\(gid.uuidString.lowercased())'")
            #expect(try count(restored, "SELECT count(*) AS n FROM group_events WHERE group_id = '\(gid.uuidString.lowercased())'") == last,
                    "the log runs 1...\(last) with no gap")
            print("backup under traffic: \(posted) posts during the dump; \(kept) messages restored, \(committedBeforeDump) committed before it began")

            // Served from the restore, a stream resumes from a cursor with exactly what came after it.
            serve = try await ServeProcess(databaseURL: TestDatabase.configuration(database: restored).connectionString)
            let stream = try await WebSocketTestClient.connect(port: serve.port, path: "/v1/stream", token: ann.token)
            #expect((await stream.receiveJSON())?["type"] as? String == "ready")
            let cursor = last - 3
            stream.sendText(#"{"type":"resume","cursors":{"\#(group)":\#(cursor)}}"#)
            var seqs: [Int] = []
            while let frame = await stream.receiveJSON(), frame["type"] as? String != "resumed" {
                if frame["type"] as? String == "event", frame["group_id"] as? String == group, let seq = frame["seq"] as? Int { seqs.append(seq) }
            }
            #expect(seqs == Array((cursor + 1)...last), "\(seqs)")
            serve.process.signal(SIGTERM)
            _ = await serve.process.wait()
        }
    }
}

/// Whether the live traffic keeps going.
final class LiveSwitch: Sendable {
    let on = Atomic<Bool>(true)
}

/// OPERATIONS' logical backup, once: a backup role as OPERATIONS makes it (as a superuser),
/// `pg_dump` as that role, and `pg_restore` as a superuser into a fresh database owned by Roost's
/// owner role (as the first was, so that it migrates there). `drop` removes the role, the dump
/// and the restored database.
final class LogicalBackup {
    let admin: PostgresConnection
    let role = "roost_backup_" + UUID().uuidString.prefix(8).lowercased()
    let restored = "roost_restored_" + UUID().uuidString.prefix(8).lowercased()
    let file = NSTemporaryDirectory() + "roost-backup-\(UUID().uuidString).dump"

    init() throws {
        admin = try PostgresConnection.connect(ConnectionConfiguration(connectionString: BackupTests.url(user: "postgres", database: "postgres")))
        try admin.run(script: "CREATE ROLE \(role) LOGIN BYPASSRLS; GRANT pg_read_all_data TO \(role)")
    }

    func dump(_ database: String) async throws -> Subprocess.Outcome {
        try await Subprocess.run(BackupTests.bindir + "/pg_dump", ["--format=custom", "--file=\(file)", "--dbname=\(BackupTests.url(user: role, database: database))"])
    }

    func restore(ownedBy ownerURL: String) async throws -> Subprocess.Outcome {
        let owner = try #require(URLComponents(string: ownerURL)?.queryItems?.first { $0.name == "user" }?.value)
        try admin.run(script: "CREATE DATABASE \(restored) OWNER \(owner)")
        return try await Subprocess.run(BackupTests.bindir + "/pg_restore", ["--exit-on-error", "--dbname=\(BackupTests.url(user: "postgres", database: restored))", file])
    }

    func drop() {
        unlink(file)
        try? admin.run(script: "DROP DATABASE IF EXISTS \(restored) WITH (FORCE)")
        try? admin.run(script: "DROP ROLE IF EXISTS \(role)")
    }
}
