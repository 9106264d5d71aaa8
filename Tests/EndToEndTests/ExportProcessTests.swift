import Foundation
import RoostPersistence
import RoostProtocol
import RoostServer
import RoostTestSupport
import Testing

/// `GET /v1/me/export` of a long history from a real `roost serve`: 100,000 messages stream as
/// one JSON document while the server's peak resident memory grows by far less than the
/// document (figures printed: they go in the note).
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct ExportProcessTests {
    /// `VmHWM` (peak resident set) and `VmRSS` of a process, in KiB.
    static func memory(of pid: pid_t) throws -> (peak: Int, now: Int) {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        func field(_ name: String) -> Int {
            let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
            return Int(line.split(separator: " ").dropFirst().first { !$0.isEmpty }.map { $0.trimmingCharacters(in: .whitespaces) } ?? "") ?? 0
        }
        return (field("VmHWM"), field("VmRSS"))
    }

    @Test func aHundredThousandMessagesStreamAsOneDocumentInBoundedMemory() async throws {
        try await TestDatabase.withScratchDatabaseAsync { database in
            let url = TestDatabase.configuration(database: database).connectionString
            let connection = try TestDatabase.connect(database: database)
            try Migrator(migrations: Migration.load(from: TestDatabase.migrationsDirectory)).run(on: connection)
            let tenant = try TenantStore().create(slug: "export-street", name: "Export Street", registration: .open, on: connection).id
            let node = try await ServeProcess(databaseURL: url)
            let api = try APIClient(port: node.port)
            let (_, account) = try await api.call("POST", "/v1/auth/register", ["tenant": "export-street", "email": "ann@example.org",
                                                                              "password": "a long enough password", "display_name": "Ann"])
            let token = try #require(account["token"] as? String)
            let userText = try #require((account["user"] as? [String: Any])?["id"] as? String)
            let user = try #require(UUID(uuidString: userText))
            let groupText = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm"], token: token).1["id"] as? String)
            let group = try #require(UUID(uuidString: groupText))
            let count = 100_000
            try connection.withTenantTransaction(tenant) { connection in
                try connection.query("""
                    INSERT INTO group_events (tenant_id, group_id, seq, event, actor_type, actor_id, data)
                    SELECT \(tenant), \(group), s, 'message.created', 'user', \(user), '{}' FROM generate_series(2, \(count + 1)) s
                    """)
                try connection.query("""
                    INSERT INTO messages (tenant_id, group_id, seq, author_type, author_id, kind, text)
                    SELECT \(tenant), \(group), s, 'user', \(user), 'chat', 'Message ' || s || ': the white van is parked by number 12 again'
                    FROM generate_series(2, \(count + 1)) s
                    """)
                try connection.query("UPDATE group_seqs SET last_seq = \(count + 1) WHERE group_id = \(group)")
            }
            _ = try await api.call("GET", "/v1/me", token: token)  // warm
            let before = try Self.memory(of: node.process.pid)
            let client = try TestClient(port: node.port, receiveTimeoutSeconds: 120)
            client.send("GET /v1/me/export HTTP/1.1\r\nAuthorization: Bearer \(token)\r\n\r\n")
            let started = ContinuousClock.now
            let response = try #require(await client.readResponse())
            let elapsed = ContinuousClock.now - started
            let after = try Self.memory(of: node.process.pid)
            #expect(response.status == 200 && response.headers["transfer-encoding"] == "chunked")
            #expect(response.headers["content-disposition"]?.hasPrefix("attachment; filename=\"roost-export-") == true)
            let document = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
            let messages = try #require(document["messages"] as? [[String: Any]])
            #expect(messages.count == count && messages.first?["seq"] as? Int == 2 && messages.last?["seq"] as? Int == count + 1)
            #expect((document["user"] as? [String: Any])?["email"] as? String == "ann@example.org")
            #expect((document["memberships"] as? [[String: Any]])?.first?["role"] as? String == "owner")
            let growth = (after.peak - before.peak) / 1024
            print("export: \(count) messages, \(response.body.count / 1_048_576) MiB document in \(elapsed); server peak RSS \(before.peak / 1024) → "
                  + "\(after.peak / 1024) MiB (+\(growth) MiB), RSS now \(after.now / 1024) MiB")
            #expect(growth < 32, "the server's peak memory grew by \(growth) MiB for a \(response.body.count / 1_048_576) MiB export")
            node.process.signal(SIGTERM)
            #expect(await node.process.wait() == 0)
        }
    }
}
