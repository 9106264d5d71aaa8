import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Check-in deadlines across real `roost serve` processes: one that falls due while no node
/// runs fires as soon as nodes start again, exactly once with two of them racing.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct CheckinNodesTests {
    @Test func aCheckinDueDuringDowntimeFiresOnceWhenTwoNodesStart() async throws {
        let slug = "checkin-\(UUID().uuidString.prefix(8).lowercased())"
        let setup = try TestDatabase.migratedConnection()
        let tenant = try TenantStore().create(slug: slug, name: "Check-ins", registration: .open, on: setup).id

        let first = try await ServeProcess(["--checkin-min-s", "1"])
        let client = try APIClient(port: first.port)
        let (_, registered) = try await client.call("POST", "/v1/auth/register", [
            "tenant": slug, "email": "sam@example.org", "password": "a long enough password", "display_name": "Sam",
        ])
        let token = try #require(registered["token"] as? String)
        let group = try #require(try await client.call("POST", "/v1/groups", ["name": "Dark lane"], token: token).1["id"] as? String)
        let (created, checkin) = try await client.call("POST", "/v1/checkins", ["group_id": group, "due_in_s": 2, "grace_s": 0, "note": "Cycling home"], token: token)
        #expect(created == 201)
        let id = try #require(checkin["id"] as? String).lowercased()
        first.process.signal(SIGTERM)
        #expect(await first.process.wait() == 0)

        func state() throws -> (due: Bool, status: String, alerts: Int) {
            try setup.withTenantTransaction(tenant) { connection in
                let row = try connection.query("""
                    SELECT due_at <= now() AS due, status,
                           (SELECT count(*) FROM messages WHERE group_id = c.group_id AND template = 'missed_checkin') AS alerts
                    FROM checkins c WHERE id = \(UUID(uuidString: id)!)
                    """).rows[0]
                return (try row.decode(Bool.self, "due"), try row.decode(String.self, "status"), try row.decode(Int.self, "alerts"))
            }
        }
        // The deadline passes while this tenant's nodes are down (waiting on the clock itself).
        let deadline = ContinuousClock.now + .seconds(10)
        while try !state().due && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        #expect(try state().due)

        let nodes = [try await ServeProcess(["--checkin-min-s", "1"]), try await ServeProcess(["--checkin-min-s", "1"])]
        while try state().status == "active" && ContinuousClock.now < deadline + .seconds(10) { try await Task.sleep(for: .milliseconds(50)) }
        // Both nodes run further rounds meanwhile; the count must stay one.
        try await Task.sleep(for: .milliseconds(1500))
        let final = try state()
        #expect(final.status == "missed" && final.alerts == 1, "\(final)")
        for node in nodes {
            node.process.signal(SIGTERM)
            #expect(await node.process.wait() == 0)
        }
    }
}
