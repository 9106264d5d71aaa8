import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Check-in deadlines across real `roost serve` processes: one that falls due while no node
/// runs fires as soon as nodes start again, exactly once with two of them racing; the prompt,
/// the alert and the all clear happen once each across a restart.
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
        try await Poll.until(every: .milliseconds(100)) { try state().due }
        #expect(try state().due)

        let nodes = [try await ServeProcess(["--checkin-min-s", "1"]), try await ServeProcess(["--checkin-min-s", "1"])]
        try await Poll.until(every: .milliseconds(50)) { try state().status != "active" }
        // Both nodes run further rounds meanwhile (a round is 500 ms); the count must stay one.
        try await Poll.quiet(for: .milliseconds(1500))
        let final = try state()
        #expect(final.status == "missed" && final.alerts == 1, "\(final)")
        for node in nodes {
            node.process.signal(SIGTERM)
            #expect(await node.process.wait() == 0)
        }
    }

    /// An extended check-in across two real nodes on the real clock: with both schedulers racing
    /// there is exactly one prompt; both nodes stop between the prompt and the miss, the grace
    /// runs out while none runs, and two new nodes raise exactly one alert, one push per member
    /// and one message to the confirmed emergency contact; the walker's completion is exactly one
    /// all clear to each of them.
    @Test func onePromptOneAlertOneAllClearWithNodesRacingAndARestartBetweenPromptAndMiss() async throws {
        let slug = "walk-\(UUID().uuidString.prefix(8).lowercased())"
        let setup = try TestDatabase.migratedConnection()
        let tenant = try TenantStore().create(slug: slug, name: "Walks", registration: .open, on: setup).id
        func sql<Value: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> Value) throws -> Value {
            try setup.withTenantTransaction(tenant, body)
        }
        func count(_ template: String, to recipient: String) throws -> Int {
            try sql { try $0.query("SELECT count(*) AS n FROM outbox WHERE template = \(template) AND recipient = \(recipient)").rows[0].decode(Int.self, "n") }
        }
        var nodes = [try await ServeProcess(["--checkin-min-s", "1"]), try await ServeProcess(["--checkin-min-s", "1"])]
        let client = try APIClient(port: nodes[0].port)
        func register(_ name: String) async throws -> (token: String, id: String) {
            let (status, body) = try await client.call("POST", "/v1/auth/register", [
                "tenant": slug, "email": "\(name)@example.org", "password": "a long enough password", "display_name": name,
            ])
            try #require(status == 201, "\(body)")
            let token = try #require(body["token"] as? String)
            #expect(try await client.call("POST", "/v1/me/devices", ["platform": "fcm", "token": "\(name)-phone"], token: token).0 == 201)
            return (token, try #require((body["user"] as? [String: Any])?["id"] as? String))
        }
        let sam = try await register("sam")
        let tia = try await register("tia")
        let group = try #require(try await client.call("POST", "/v1/groups", ["name": "Dark lane"], token: sam.token).1["id"] as? String)
        let tiaID = try #require(UUID(uuidString: tia.id))
        _ = try sql { try $0.query("INSERT INTO memberships (tenant_id, group_id, user_id, role) VALUES (\(tenant), \(UUID(uuidString: group)!), \(tiaID), 'member')") }
        let contact = try #require(try await client.call("POST", "/v1/me/emergency-contacts", ["name": "Mum", "email": "mum@example.org"],
                                                         token: sam.token).1["id"] as? String)
        let link = try sql { try $0.query("SELECT data->>'token' AS token FROM outbox WHERE recipient = 'mum@example.org'").rows[0].decode(String.self, "token") }
        #expect(try await client.call("POST", "/v1/emergency-contacts/confirm", ["token": link]).0 == 200)

        let (created, checkin) = try await client.call("POST", "/v1/checkins", [
            "group_id": group, "contact_ids": [contact], "due_in_s": 1, "grace_s": 4, "note": "Cycling home",
        ], token: sam.token)
        #expect(created == 201)
        let text = try #require(checkin["id"] as? String)
        let id = try #require(UUID(uuidString: text))
        func state() throws -> (status: String, missDue: Bool) {
            try sql { connection in
                let row = try connection.query("""
                    SELECT status, coalesce(prompted_at + grace_s * interval '1 second' <= now(), false) AS miss_due FROM checkins WHERE id = \(id)
                    """).rows[0]
                return (try row.decode(String.self, "status"), try row.decode(Bool.self, "miss_due"))
            }
        }
        // Both nodes race for the deadline: one prompt.
        try await Poll.until(every: .milliseconds(50)) { try state().status != "active" }
        #expect(try state().status == "prompting")
        for node in nodes {
            node.process.signal(SIGTERM)
            #expect(await node.process.wait() == 0)
        }
        #expect(try count("checkin_prompt", to: "sam-phone") == 1)
        // The grace runs out while no node runs (waiting on the clock itself).
        try await Poll.until(every: .milliseconds(100)) { try state().missDue }
        // (Other tests' nodes share this database and may fire it meanwhile; either way it fires once.)
        #expect(try state().missDue)
        nodes = [try await ServeProcess(["--checkin-min-s", "1"]), try await ServeProcess(["--checkin-min-s", "1"])]
        try await Poll.until(every: .milliseconds(50)) { try state().status != "prompting" }
        // Both nodes run further rounds meanwhile (a round is 500 ms); every count must stay one.
        try await Poll.quiet(for: .milliseconds(1500))
        #expect(try state().status == "missed")
        let alerts = try sql { try $0.query("SELECT count(*) AS n FROM messages WHERE template = 'missed_checkin'").rows[0].decode(Int.self, "n") }
        #expect(alerts == 1)
        #expect(try count("checkin_prompt", to: "sam-phone") == 1)
        #expect(try count("alert", to: "tia-phone") == 1 && count("alert", to: "sam-phone") == 0)
        #expect(try count("checkin_alert", to: "mum@example.org") == 1)

        // Sam is safe after all: one all clear each, and no second.
        let again = try APIClient(port: nodes[1].port)
        #expect(try await again.call("POST", "/v1/checkins/\(id.uuidString.lowercased())/complete", token: sam.token).0 == 200)
        #expect(try await again.call("POST", "/v1/checkins/\(id.uuidString.lowercased())/complete", token: sam.token).0 == 409)
        #expect(try count("alert_closed", to: "tia-phone") == 1)
        #expect(try count("checkin_all_clear", to: "mum@example.org") == 1)
        for node in nodes {
            node.process.signal(SIGTERM)
            #expect(await node.process.wait() == 0)
        }
    }
}
