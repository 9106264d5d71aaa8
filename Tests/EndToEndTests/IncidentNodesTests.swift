import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// An incident over two real `roost serve` processes sharing the database, each person on the
/// node of their choice: pushes with distances and the critical flag, escalation once per level
/// with both nodes' schedulers racing and across a restart of both, an escalation contact who
/// hears nothing before confirming, responders heard by the author, live locations coalesced
/// across nodes, read markers synced to the reader's stream on the other node, and the all
/// clear. Time is moved only where the contract's own minimums are minutes (an escalation is
/// made due by moving its alert's opening back, exactly what waiting would do).
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct IncidentNodesTests {
    struct Person {
        let token: String
        let id: String
    }

    /// Frames of `stream` until one matches `stop` (returned last); fails when the stream ends.
    static func frames(_ stream: WebSocketTestClient, until stop: ([String: Any]) -> Bool) async throws -> [[String: Any]] {
        var seen: [[String: Any]] = []
        while true {
            let frame = try #require(await stream.receiveJSON(), "the stream ended after \(seen.count) frames")
            seen.append(frame)
            if stop(frame) { return seen }
        }
    }

    static func isEvent(_ name: String) -> ([String: Any]) -> Bool { { $0["type"] as? String == "event" && $0["event"] as? String == name } }
    static func isNotice(_ name: String) -> ([String: Any]) -> Bool { { $0["type"] as? String == "notice" && $0["event"] as? String == name } }

    @Test func anIncidentAcrossTwoNodesFromRaisingToAllClear() async throws {
        let slug = "incident-\(UUID().uuidString.prefix(8).lowercased())"
        let setup = try TestDatabase.migratedConnection()
        let tenant = try TenantStore().create(slug: slug, name: "Incidents", registration: .open, on: setup).id
        var a = try await ServeProcess()
        var b = try await ServeProcess()
        func on(_ node: ServeProcess) throws -> APIClient { try APIClient(port: node.port) }
        func register(_ name: String, at node: ServeProcess, home: (Double, Double)?) async throws -> Person {
            let client = try on(node)
            let (status, body) = try await client.call("POST", "/v1/auth/register", [
                "tenant": slug, "email": "\(name.lowercased())@example.org", "password": "a long enough password", "display_name": name,
            ])
            try #require(status == 201, "\(body)")
            let person = Person(token: try #require(body["token"] as? String), id: try #require((body["user"] as? [String: Any])?["id"] as? String))
            #expect(try await client.call("POST", "/v1/me/devices", ["platform": "fcm", "token": "\(name)-phone"], token: person.token).0 == 201)
            if let (lat, lon) = home {
                #expect(try await client.call("PATCH", "/v1/me", ["home": ["location": ["lat": lat, "lon": lon]]], token: person.token).0 == 200)
            }
            return person
        }
        func sql<Value: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> Value) throws -> Value {
            try setup.withTenantTransaction(tenant, body)
        }
        /// Outbox rows of this tenant: (recipient, template, data).
        func outbox(_ template: String) throws -> [(to: String, data: [String: Any])] {
            try sql { connection in
                try connection.query("SELECT recipient, data::text AS data FROM outbox WHERE template = \(template) ORDER BY created_at, id").rows.map {
                    (try $0.decode(String.self, "recipient"), try $0.decode(String.self, "data"))
                }
            }.map { ($0.0, (try? JSONSerialization.jsonObject(with: Data($0.1.utf8)) as? [String: Any]) ?? [:]) }
        }

        // Ann raises alerts from node A; Ben lives 100 m from where it happens, Cy 5 km away,
        // Dee has no home on the map; Ben and Dee use node B.
        let ann = try await register("Ann", at: a, home: nil)
        let ben = try await register("Ben", at: b, home: (55.0009, 12.0))
        let cy = try await register("Cy", at: a, home: (55.045, 12.0))
        let dee = try await register("Dee", at: b, home: nil)
        let group = try #require(try await on(a).call("POST", "/v1/groups", ["name": "Elm Street"], token: ann.token).1["id"] as? String)
        let groupID = try #require(UUID(uuidString: group))
        try sql { connection in
            for person in [ben, cy, dee] {
                try connection.query("INSERT INTO memberships (tenant_id, group_id, user_id, role) VALUES (\(tenant), \(groupID), \(UUID(uuidString: person.id)!), 'member')")
            }
        }
        #expect(try await on(b).call("PATCH", "/v1/groups/\(group)", ["escalate_after_s": 3600, "nearby_m": 500], token: ann.token).0 == 200)
        #expect(try await on(b).call("PATCH", "/v1/groups/\(group)", ["escalate_after_s": 30], token: ann.token).0 == 400)

        // Two escalation contacts; only one confirms (through node B, with the token its email carried).
        let contacts = "/v1/groups/\(group)/escalation-contacts"
        #expect(try await on(a).call("POST", contacts, ["name": "Aunt May", "email": "may@example.org"], token: ann.token).0 == 201)
        #expect(try await on(a).call("POST", contacts, ["name": "Uncle Bob", "email": "bob@example.org"], token: ann.token).0 == 201)
        let confirmation = try #require(try outbox("escalation_contact_confirm").first { $0.to == "may@example.org" })
        let contactToken = try #require(confirmation.data["token"] as? String)
        #expect(try await on(b).call("POST", "/v1/escalation-contacts/confirm", ["token": contactToken]).0 == 200)
        #expect(try await on(a).call("POST", "/v1/escalation-contacts/confirm", ["token": contactToken]).0 == 410, "a link works once")
        #expect(try await on(a).call("POST", "/v1/escalation-contacts/confirm", ["token": "rec_forged"]).0 == 404)

        // Dee watches on node A, Ben on node B.
        let deeStream = try await WebSocketTestClient.connect(port: a.port, path: "/v1/stream", token: dee.token)
        #expect(await deeStream.receiveJSON()?["type"] as? String == "ready")
        let benStream = try await WebSocketTestClient.connect(port: b.port, path: "/v1/stream", token: ben.token)
        #expect(await benStream.receiveJSON()?["type"] as? String == "ready")

        // 1. Raised on A: every member's device is pushed with their distance; Ben is within 500 m.
        let (raised, alert) = try await on(a).call("POST", "/v1/groups/\(group)/messages", [
            "client_msg_id": UUID().uuidString, "text": "Someone trying car doors", "kind": "alert", "severity": "red",
            "location": ["lat": 55.0, "lon": 12.0],
        ], token: ann.token)
        try #require(raised == 201, "\(alert)")
        let seq = try #require(alert["seq"] as? Int)
        _ = try await Self.frames(benStream, until: Self.isEvent("message.created"))
        let pushed = Dictionary(try outbox("alert").map { ($0.to, $0.data) }) { first, _ in first }
        #expect(Set(pushed.keys) == ["Ben-phone", "Cy-phone", "Dee-phone"], "the author is not pushed their own alert")
        let benDistance = try #require(pushed["Ben-phone"]?["distance_m"] as? Double)
        let cyDistance = try #require(pushed["Cy-phone"]?["distance_m"] as? Double)
        #expect(abs(benDistance - 100) < 2 && abs(cyDistance - 5004) < 20, "\(benDistance) \(cyDistance)")
        #expect(pushed["Ben-phone"]?["critical"] as? Bool == true && pushed["Cy-phone"]?["critical"] as? Bool != true)
        #expect(pushed["Dee-phone"]?["distance_m"] is NSNull || pushed["Dee-phone"]?["distance_m"] == nil)

        // 2. Level 1 falls due (the alert opened an hour ago): both nodes' schedulers race; it fires once.
        func makeDue(level: Int) throws {
            _ = try sql { connection in
                try connection.query("""
                    UPDATE alert_escalations SET since = now() - \(level * 3600 + 1) * interval '1 second', due_at = now()
                    WHERE tenant_id = \(tenant) AND group_id = \(groupID) AND seq = \(seq)
                    """)
            }
        }
        try makeDue(level: 1)
        let escalated = try await Self.frames(deeStream, until: Self.isEvent("alert.escalated")).last!
        #expect((escalated["data"] as? [String: Any])?["level"] as? Int == 1)
        // The next level is scheduled once level 1 has committed: from then on no node can fire it again.
        func escalationState() throws -> (events: Int, level: Int, pending: Int) {
            try sql { connection in
                let row = try connection.query("""
                    SELECT (SELECT count(*) FROM group_events WHERE group_id = \(groupID) AND event = 'alert.escalated') AS events,
                           (SELECT escalation_level FROM alerts WHERE group_id = \(groupID) AND seq = \(seq)) AS level,
                           (SELECT count(*) FROM alert_escalations WHERE tenant_id = \(tenant) AND group_id = \(groupID) AND due_at > now()) AS pending
                    """).rows[0]
                return (try row.decode(Int.self, "events"), try row.decode(Int.self, "level"), try row.decode(Int.self, "pending"))
            }
        }
        #expect(try escalationState() == (1, 1, 1))
        let repushed = try outbox("alert").filter { $0.data["escalation_level"] as? Int == 1 }
        #expect(Set(repushed.map(\.to)) == ["Ben-phone", "Cy-phone", "Dee-phone"] && repushed.count == 3, "\(repushed.map(\.to))")
        #expect(repushed.allSatisfy { $0.data["critical"] as? Bool == true && $0.data["group_name"] as? String == "Elm Street" })
        #expect((repushed.first { $0.to == "Ben-phone" }?.data["distance_m"] as? Double).map { abs($0 - 100) < 2 } == true)
        #expect(repushed.first { $0.to == "Dee-phone" }?.data["distance_m"] is NSNull, "no home on the map: no distance")
        #expect(try outbox("alert_escalated").isEmpty, "contacts hear from level 2 on")

        // 3. Both nodes stop; level 2 falls due while none runs; two new nodes fire it once.
        for node in [a, b] {
            node.process.signal(SIGTERM)
            #expect(await node.process.wait() == 0)
        }
        try makeDue(level: 2)
        (a, b) = (try await ServeProcess(), try await ServeProcess())
        let watcher = try await WebSocketTestClient.connect(port: b.port, path: "/v1/stream", token: dee.token)
        try #require(await watcher.receiveJSON()?["type"] as? String == "ready")
        try await Poll.until(every: .milliseconds(50)) { try escalationState().level >= 2 }
        #expect(try escalationState() == (2, 2, 1))
        // Only the contact who confirmed is told; the other got their confirmation request and nothing else.
        let toContacts = try outbox("alert_escalated")
        #expect(toContacts.map(\.to) == ["may@example.org"] && toContacts.first?.data["level"] as? Int == 2, "\(toContacts.map(\.to))")
        #expect(try outbox("escalation_contact_confirm").map(\.to).sorted() == ["bob@example.org", "may@example.org"])

        // 4. Ben answers on his way through node B: Ann's phone hears it, and escalation stops.
        #expect(try await on(b).call("POST", "/v1/groups/\(group)/alerts/\(seq)/ack", ["response": "on_my_way", "note": "2 min"], token: ben.token).0 == 200)
        let responses = try outbox("alert_response")
        #expect(responses.map(\.to) == ["Ann-phone"], "\(responses.map(\.to))")
        #expect(responses.first?.data["response"] as? String == "on_my_way")
        try makeDue(level: 3)
        try await Poll.until(every: .milliseconds(50)) {
            try escalationState().pending + (try sql { try $0.query("SELECT count(*) AS n FROM alert_escalations WHERE tenant_id = \(tenant)").rows[0].decode(Int.self, "n") }) == 0
        }
        #expect(try escalationState() == (2, 2, 0), "an answer on the way stops escalation")

        // 5. Ben shares his position through node A, 40 points as fast as he can: Dee's stream on
        // node B is told at most once per 2 s, and the last told point is the newest.
        let live = "/v1/groups/\(group)/alerts/\(seq)/live-location"
        let benOnA = try on(a)
        let started = ContinuousClock.now
        for step in 0..<40 {
            #expect(try await benOnA.call("POST", live, ["lat": 55.0 + Double(step) * 0.0001, "lon": 12.0], token: ben.token).0 == 204)
        }
        let burst = ContinuousClock.now - started
        #expect(try await on(b).call("POST", live, ["lat": 55.0, "lon": 12.0], token: cy.token).0 == 403, "Cy is not on his way")
        var updates: [[String: Any]] = []
        while updates.last.flatMap({ ($0["data"] as? [String: Any])?["lat"] as? Double }).map({ abs($0 - 55.0039) > 1e-9 }) ?? true {
            updates += try await Self.frames(watcher, until: Self.isNotice("location.updated")).filter(Self.isNotice("location.updated"))
        }
        let told = ContinuousClock.now - started
        // Every 2 s at most: the notices are fewer than the whole time allows, and far fewer than the points.
        #expect(updates.count <= Int((told / .seconds(2)).rounded(.down)) + 1 && updates.count < 40, "\(updates.count) notices in \(told)")
        if burst < .seconds(2) { #expect(updates.count == 2, "the first point at once, the newest after 2 s") }

        // 6. Dee reads up to the alert on node A; her stream on B hears it; a marker never moves back.
        #expect(try await on(a).call("POST", "/v1/groups/\(group)/read", ["seq": seq], token: dee.token).0 == 204)
        let read = try await Self.frames(watcher, until: Self.isNotice("read.updated")).last!
        #expect((read["data"] as? [String: Any])?["seq"] as? Int == seq)
        #expect(try await on(b).call("POST", "/v1/groups/\(group)/read", ["seq": 1], token: dee.token).0 == 204)
        var listed = try #require((try await on(b).call("GET", "/v1/groups", token: dee.token).1["items"] as? [[String: Any]])?.first)
        #expect(listed["unread"] as? Int == 0 && listed["unread_alerts"] as? Int == 0, "the marker stayed at the alert: \(listed)")
        let (posted, chat) = try await on(a).call("POST", "/v1/groups/\(group)/messages", ["client_msg_id": UUID().uuidString, "text": "Police called", "kind": "chat"],
                                                  token: cy.token)
        #expect(posted == 201, "\(chat)")
        listed = try #require((try await on(b).call("GET", "/v1/groups", token: dee.token).1["items"] as? [[String: Any]])?.first)
        #expect(listed["unread"] as? Int == 1 && listed["unread_alerts"] as? Int == 0, "\(listed)")

        // 7. Ann closes on node B: sharing ends on every stream, and everyone pushed hears the all clear.
        #expect(try await on(b).call("POST", "/v1/groups/\(group)/alerts/\(seq)/close", ["resolution": "Police came"], token: ann.token).0 == 200)
        let afterClose = try await Self.frames(watcher, until: Self.isNotice("location.ended"))
        #expect((afterClose.last?["data"] as? [String: Any])?["user_id"] as? String == ben.id)
        let allClear = try outbox("alert_closed")
        #expect(Set(allClear.map(\.to)) == ["Ben-phone", "Cy-phone", "Dee-phone"] && allClear.count == 3, "\(allClear.map(\.to))")
        #expect(allClear.allSatisfy { (($0.data["alert"] as? [String: Any])?["alert"] as? [String: Any])?["resolution"] as? String == "Police came" })
        #expect(allClear.allSatisfy { $0.data["distance_m"] == nil && $0.data["critical"] == nil }, "the all clear is not a call to come")
        let (status, sharers) = try await on(a).call("GET", "/v1/groups/\(group)/alerts/\(seq)/live-locations", token: dee.token)
        #expect(status == 200 && (sharers["items"] as? [Any])?.isEmpty == true, "points are deleted when sharing ends: \(sharers)")
        for node in [a, b] {
            node.process.signal(SIGTERM)
            #expect(await node.process.wait() == 0)
        }
    }
}
