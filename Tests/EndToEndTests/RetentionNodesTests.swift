import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Retention across two real `roost serve` nodes on a database of the test's own: the operator
/// sets it on one node, the nodes' schedulers purge what came of age and keep the open alert, a
/// resume from behind gets `reset` on one node and 410 on the other while a live stream goes on
/// untouched, and after both nodes restart nothing is purged before its time, then it is.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct RetentionNodesTests {
    static let adminToken = "retention-operator-\(UUID().uuidString)"

    func nodes(_ url: String) async throws -> [ServeProcess] {
        let environment = ["ROOST_ADMIN_TOKEN": Self.adminToken]
        return [try await ServeProcess(databaseURL: url, environment: environment), try await ServeProcess(databaseURL: url, environment: environment)]
    }

    func stop(_ nodes: [ServeProcess]) async {
        for node in nodes {
            node.process.signal(SIGTERM)
            #expect(await node.process.wait() == 0)
        }
    }

    /// Waits (bounded) for `condition`, recording `what` did not happen.
    func eventually(_ what: String, _ condition: () async throws -> Bool) async throws {
        if try await !Poll.until(every: .milliseconds(50), condition) { Issue.record("did not happen: \(what)") }
    }

    @Test func twoNodesPurgeWhatCameOfAgeTellCursorsBehindAndPurgeNothingEarlyAcrossARestart() async throws {
        try await TestDatabase.withScratchDatabaseAsync { database in
            let url = TestDatabase.configuration(database: database).connectionString
            let owner = try TestDatabase.connect(database: database)
            try Migrator(migrations: Migration.load(from: TestDatabase.migrationsDirectory)).run(on: owner)
            let tenant = try TenantStore().create(slug: "kept-lane", name: "Kept Lane", registration: .open, on: owner).id
            @discardableResult func inTenant<Value>(_ body: (PostgresConnection) throws -> Value) throws -> Value {
                try owner.withTenantTransaction(tenant, body)
            }

            var running = try await nodes(url)
            let (a, b) = (try APIClient(port: running[0].port), try APIClient(port: running[1].port))
            let (_, account) = try await a.call("POST", "/v1/auth/register", ["tenant": "kept-lane", "email": "ann@example.org",
                                                                             "password": "a long enough password", "display_name": "Ann"])
            let token = try #require(account["token"] as? String)
            let group = try #require(try await a.call("POST", "/v1/groups", ["name": "Kept Lane"], token: token).1["id"] as? String)
            let gid = try #require(UUID(uuidString: group))
            func post(_ text: String, kind: String = "chat", on client: APIClient) async throws -> Int {
                let (status, message) = try await client.call("POST", "/v1/groups/\(group)/messages",
                                                              ["client_msg_id": UUID().uuidString, "text": text, "kind": kind], token: token)
                #expect(status == 201, "\(message)")
                return try #require(message["seq"] as? Int)
            }
            func texts(on client: APIClient) async throws -> [String] {
                let (_, page) = try await client.call("GET", "/v1/groups/\(group)/messages?limit=200", token: token)
                return (page["items"] as? [[String: Any]] ?? []).compactMap { $0["text"] as? String }
            }
            func oldestSeq(on client: APIClient) async throws -> Int? {
                try await client.call("GET", "/v1/groups/\(group)", token: token).1["oldest_seq"] as? Int
            }
            func age(_ seqs: ClosedRange<Int>, days: Double) throws {
                try inTenant { connection in
                    try connection.query("""
                        UPDATE group_events SET created_at = now() - \(days) * interval '1 day'
                        WHERE group_id = \(gid) AND seq BETWEEN \(seqs.lowerBound) AND \(seqs.upperBound)
                        """)
                }
            }

            _ = try await post("Bins out tonight", on: a)
            _ = try await post("Car alarm on Elm", kind: "alert", on: a)  // stays open
            _ = try await post("Anyone lost a cat?", on: b)
            let closed = try await post("Gate left open", kind: "alert", on: b)
            #expect(try await b.call("POST", "/v1/groups/\(group)/alerts/\(closed)/close", [:], token: token).0 == 200)
            let through = try #require(try await a.call("GET", "/v1/groups/\(group)", token: token).1["last_seq"] as? Int)
            let edge = try await post("Street party Saturday", on: a)
            try age(1...through, days: 3)
            try age(edge...edge, days: 2 - 1.0 / 24)  // an hour short of two days

            // A live stream on node B, caught up before the purge.
            let live = try await WebSocketTestClient.connect(port: running[1].port, path: "/v1/stream", token: token)
            #expect(await live.receiveJSON()?["type"] as? String == "ready")
            live.sendText(#"{"type":"resume","cursors":{}}"#)
            #expect(await live.receiveJSON()?["type"] as? String == "resumed")

            // The operator keeps two days, through node A.
            let (patched, view) = try await a.call("PATCH", "/v1/admin/tenants/kept-lane", ["retention_days": 2], token: Self.adminToken)
            #expect(patched == 200 && view["retention_days"] as? Int == 2, "\(view)")
            try await eventually("a node purges through seq \(through)") { try await oldestSeq(on: b) == through + 1 }
            #expect(try await texts(on: a) == ["Street party Saturday", "Car alarm on Elm"])
            #expect(try await texts(on: b) == ["Street party Saturday", "Car alarm on Elm"])

            // Behind the mark: 410 on A, `reset` then what is kept on B; at the mark, both read on.
            let (gone, expired) = try await a.call("GET", "/v1/groups/\(group)/events?after=1", token: token)
            #expect(gone == 410 && (expired["error"] as? [String: Any])?["oldest_seq"] as? Int == through + 1, "\(expired)")
            let (ok, page) = try await b.call("GET", "/v1/groups/\(group)/events?after=\(through)", token: token)
            #expect(ok == 200 && (page["items"] as? [[String: Any]])?.compactMap { $0["seq"] as? Int } == [edge])
            let behind = try await WebSocketTestClient.connect(port: running[1].port, path: "/v1/stream", token: token)
            #expect(await behind.receiveJSON()?["type"] as? String == "ready")
            behind.sendText(#"{"type":"resume","cursors":{"\#(group)":1}}"#)
            let reset = try #require(await behind.receiveJSON())
            #expect(reset["type"] as? String == "reset" && reset["oldest_seq"] as? Int == through + 1, "\(reset)")
            #expect(await behind.receiveJSON()?["seq"] as? Int == edge)
            #expect(await behind.receiveJSON()?["type"] as? String == "resumed")
            // The live stream was not told anything: it had everything; the next event reaches it as ever.
            let next = try await post("Thanks all", on: a)
            let frame = try #require(await live.receiveJSON())
            #expect(frame["type"] as? String == "event" && frame["seq"] as? Int == next, "\(frame)")

            // Both nodes restart; the purge is made due at once: the edge message is an hour short
            // of its age, so nothing more goes, and the job waits for it.
            await stop(running)
            running = try await nodes(url)
            let c = try APIClient(port: running[0].port)
            try inTenant { try $0.query("UPDATE retention_jobs SET due_at = now() WHERE group_id = \(gid)") }
            try await eventually("a restarted node runs the due purge") {
                try inTenant { try $0.query("SELECT due_at > now() AS waiting FROM retention_jobs WHERE group_id = \(gid)").first?
                    .decode(Bool.self, "waiting") ?? false }
            }
            #expect(try await oldestSeq(on: c) == through + 1)
            #expect(try await texts(on: c) == ["Thanks all", "Street party Saturday", "Car alarm on Elm"])
            let waits = try inTenant { connection in
                try connection.query("""
                    SELECT j.due_at >= e.created_at + interval '2 days' AS later FROM retention_jobs j, group_events e
                    WHERE j.group_id = \(gid) AND e.group_id = \(gid) AND e.seq = \(edge)
                    """).first?.decode(Bool.self, "later")
            }
            #expect(waits == true, "the purge is due before the edge message comes of age")

            // Its time comes (two hours on, as the clock sees it): it goes, the open alert stays.
            try age(edge...edge, days: 2 + 1.0 / 24)
            try inTenant { try $0.query("UPDATE retention_jobs SET due_at = now() WHERE group_id = \(gid)") }
            try await eventually("the edge message is purged") { try await oldestSeq(on: c) == edge + 1 }
            #expect(try await texts(on: c) == ["Thanks all", "Car alarm on Elm"])
            await stop(running)
        }
    }
}
