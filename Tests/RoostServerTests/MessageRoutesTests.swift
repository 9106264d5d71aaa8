import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// API.md "Messages and alerts" over real sockets and the real database.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct MessageRoutesTests {
    static func error(_ body: [String: Any]) -> [String: Any] { body["error"] as? [String: Any] ?? [:] }

    @Test func postsAreIdempotentOnClientMessageIDEvenUnderConcurrentRepeats() async throws {
        let api = try APIFixture()
        let ann = try await api.person(email: "ann@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm"], token: ann.token).1["id"] as? String)
        let body: [String: Any] = ["client_msg_id": "c-1", "text": "  Parcel left at no. 4  ", "kind": "chat"]
        let (created, first) = try await api.call("POST", "/v1/groups/\(group)/messages", body, token: ann.token)
        #expect(created == 201)
        #expect(first["text"] as? String == "Parcel left at no. 4" && first["kind"] as? String == "chat" && first["alert"] is NSNull)
        #expect(first["group_id"] as? String == group && first["client_msg_id"] as? String == "c-1")
        let (again, repeated) = try await api.call("POST", "/v1/groups/\(group)/messages", body, token: ann.token)
        #expect(again == 200 && repeated["id"] as? String == first["id"] as? String && repeated["seq"] as? Int == first["seq"] as? Int)

        // Ten connections repeat one new id at once: one message, ten identical answers.
        let (port, token) = (api.test.port, ann.token)
        let answers = try await withThrowingTaskGroup(of: (Int, String?).self) { tasks in
            for _ in 0..<10 {
                tasks.addTask {
                    let client = try APIFixture.Client(port: port)
                    let (status, message) = try await client.call("POST", "/v1/groups/\(group)/messages",
                                                                  ["client_msg_id": "race", "text": "Once", "kind": "chat"], token: token)
                    return (status, message["id"] as? String)
                }
            }
            return try await tasks.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.filter { $0.0 == 201 }.count == 1)
        #expect(answers.allSatisfy { $0.0 == 201 || $0.0 == 200 })
        #expect(Set(answers.map(\.1)).count == 1)
        let events = try await api.call("GET", "/v1/groups/\(group)/events?after=0", token: ann.token).1["items"] as? [[String: Any]]
        #expect(events?.map { $0["seq"] as? Int } == [1, 2, 3])
        #expect(events?.compactMap { $0["event"] as? String } == ["member.joined", "message.created", "message.created"])
        await api.stop()
    }

    @Test func badPostsNameTheirField() async throws {
        let api = try APIFixture()
        let ben = try await api.person(email: "ben@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Oak"], token: ben.token).1["id"] as? String)
        let base: [String: Any] = ["client_msg_id": "x", "text": "hi", "kind": "chat"]
        let cases: [([String: Any], String)] = [
            (["text": String(repeating: "a", count: 4001)], "text"), (["text": "   "], "text"), (["kind": "shout"], "kind"),
            (["severity": "red"], "severity"), (["kind": "alert", "severity": "purple"], "severity"),
            (["location": ["lat": 91, "lon": 0]], "location.lat"), (["location": ["lat": 0, "lon": -181]], "location.lon"),
            (["location": ["lat": 0, "lon": 0, "accuracy_m": -1]], "location.accuracy_m"),
            (["reply_to": 999], "reply_to"), (["template": "no_such"], "template"), (["client_msg_id": ""], "client_msg_id"),
        ]
        for (change, field) in cases {
            let (status, body) = try await api.call("POST", "/v1/groups/\(group)/messages", base.merging(change) { $1 }, token: ben.token)
            #expect(status == 400 && Self.error(body)["field"] as? String == field, "\(change) → \(status) \(body)")
        }
        // An alert from a template may leave out the text; it takes the template's words and severity.
        let (status, alert) = try await api.call("POST", "/v1/groups/\(group)/messages",
                                                 ["client_msg_id": "t", "kind": "alert", "template": "alarm",
                                                  "location": ["lat": 55.67, "lon": 12.56, "accuracy_m": 8]], token: ben.token)
        #expect(status == 201)
        #expect(alert["text"] as? String == "Alarm going off at my house" && alert["template"] as? String == "alarm")
        #expect((alert["alert"] as? [String: Any])?["severity"] as? String == "red")
        #expect((alert["location"] as? [String: Any])?["lat"] as? Double == 55.67)
        let reply = try await api.call("POST", "/v1/groups/\(group)/messages",
                                       ["client_msg_id": "r", "text": "Coming", "kind": "chat", "reply_to": alert["seq"] as! Int], token: ben.token)
        #expect(reply.0 == 201 && reply.1["reply_to"] as? Int == alert["seq"] as? Int)
        await api.stop()
    }

    @Test func alertsAreAcknowledgedClosedReopenedAndListedAcrossGroups() async throws {
        let api = try APIFixture()
        let cat = try await api.person(email: "cat@example.org")
        let dan = try await api.person(email: "dan@example.org")
        let elm = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm"], token: cat.token).1["id"] as? String)
        let oak = try #require(try await api.call("POST", "/v1/groups", ["name": "Oak"], token: cat.token).1["id"] as? String)
        try await api.addMember(dan.id, to: elm, role: "member")
        try await api.addMember(dan.id, to: oak, role: "member")
        #expect(try await api.call("POST", "/v1/me/devices", ["platform": "fcm", "token": "dan-phone"], token: dan.token).0 == 201)
        func raise(_ group: String, _ text: String, severity: String? = nil) async throws -> Int {
            var body: [String: Any] = ["client_msg_id": UUID().uuidString, "text": text, "kind": "alert"]
            if let severity { body["severity"] = severity }
            return try #require(try await api.call("POST", "/v1/groups/\(group)/messages", body, token: cat.token).1["seq"] as? Int)
        }
        let red = try await raise(elm, "Break-in at no. 7", severity: "red")
        let info = try await raise(oak, "Street lights out tonight", severity: "info")
        // Amber and red alerts reach the other members' devices through the outbox; info does not.
        let pushes = try await api.inTenant { _, connection in
            try connection.query("SELECT data->'alert'->>'text' AS text FROM outbox WHERE channel = 'push' AND recipient = 'dan-phone'")
                .rows.map { try $0.decode(String.self, "text") }
        }
        #expect(pushes == ["Break-in at no. 7"])

        let open = try #require(try await api.call("GET", "/v1/alerts?status=open", token: dan.token).1["items"] as? [[String: Any]])
        #expect(Set(open.compactMap { $0["text"] as? String }) == ["Break-in at no. 7", "Street lights out tonight"])

        // One current answer per member: a second replaces the first.
        #expect(try await api.call("POST", "/v1/groups/\(elm)/alerts/\(red)/ack", ["response": "seen"], token: dan.token).0 == 200)
        let (_, acked) = try await api.call("POST", "/v1/groups/\(elm)/alerts/\(red)/ack", ["response": "on_my_way", "note": "2 min"], token: dan.token)
        let acks = (acked["alert"] as? [String: Any])?["acks"] as? [[String: Any]]
        #expect(acks?.count == 1 && acks?.first?["response"] as? String == "on_my_way" && acks?.first?["note"] as? String == "2 min")
        #expect(try await api.call("POST", "/v1/groups/\(elm)/alerts/\(red)/ack", ["response": "maybe"], token: dan.token).0 == 400)

        // The member who did not raise it cannot close it; its author can, once.
        #expect(try await api.call("POST", "/v1/groups/\(elm)/alerts/\(red)/close", token: dan.token).0 == 403)
        let (closed, body) = try await api.call("POST", "/v1/groups/\(elm)/alerts/\(red)/close", ["resolution": "Police came"], token: cat.token)
        let state = try #require(body["alert"] as? [String: Any])
        #expect(closed == 200 && state["status"] as? String == "closed" && state["resolution"] as? String == "Police came")
        #expect((state["closed_by"] as? [String: Any])?["id"] as? String == cat.id)
        #expect(try await api.call("POST", "/v1/groups/\(elm)/alerts/\(red)/close", token: cat.token).0 == 409)
        #expect(try await api.call("POST", "/v1/groups/\(elm)/alerts/\(red)/ack", ["response": "seen"], token: dan.token).0 == 409)
        #expect((try await api.call("GET", "/v1/alerts", token: dan.token).1["items"] as? [Any])?.count == 1)
        #expect((try await api.call("GET", "/v1/groups/\(elm)/alerts?status=closed", token: dan.token).1["items"] as? [Any])?.count == 1)
        #expect(try await api.call("POST", "/v1/groups/\(elm)/alerts/\(red)/reopen", token: cat.token).0 == 200)
        #expect(try await api.call("POST", "/v1/groups/\(elm)/alerts/\(red)/reopen", token: cat.token).0 == 409)
        #expect(try await api.call("POST", "/v1/groups/\(oak)/alerts/\(info + 100)/close", token: cat.token).0 == 404)
        let events = try await api.call("GET", "/v1/groups/\(elm)/events?after=\(red)", token: dan.token).1["items"] as? [[String: Any]]
        #expect(events?.compactMap { $0["event"] as? String } == ["alert.acknowledged", "alert.acknowledged", "alert.closed", "alert.reopened"])
        await api.stop()
    }

    @Test func historyPagesNewestFirstAndRedactionBlanksTheTextButKeepsTheEvent() async throws {
        let api = try APIFixture()
        let eve = try await api.person(email: "eve@example.org")
        let fin = try await api.person(email: "fin@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Ash"], token: eve.token).1["id"] as? String)
        try await api.addMember(fin.id, to: group, role: "member")
        for index in 1...5 {
            #expect(try await api.call("POST", "/v1/groups/\(group)/messages",
                                       ["client_msg_id": "h\(index)", "text": "message \(index)", "kind": "chat"], token: eve.token).0 == 201)
        }
        let (_, first) = try await api.call("GET", "/v1/groups/\(group)/messages?limit=2", token: fin.token)
        #expect((first["items"] as? [[String: Any]])?.compactMap { $0["text"] as? String } == ["message 5", "message 4"])
        let cursor = try #require(first["next"] as? String)
        let (_, second) = try await api.call("GET", "/v1/groups/\(group)/messages?limit=2&before=\(cursor)", token: fin.token)
        #expect((second["items"] as? [[String: Any]])?.compactMap { $0["text"] as? String } == ["message 3", "message 2"])
        #expect(try await api.call("GET", "/v1/groups/\(group)/messages?before=-1", token: fin.token).0 == 400)

        // Only the author or a manager removes a message; its text goes, its event stays.
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/messages/2", token: fin.token).0 == 403)
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/messages/2", token: eve.token).0 == 204)
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/messages/99", token: eve.token).0 == 404)
        let (_, all) = try await api.call("GET", "/v1/groups/\(group)/messages", token: fin.token)
        let redacted = (all["items"] as? [[String: Any]])?.first { $0["seq"] as? Int == 2 }
        #expect(redacted?["text"] as? String == "" && redacted?["redacted"] as? Bool == true)
        let events = try #require(try await api.call("GET", "/v1/groups/\(group)/events?after=1", token: fin.token).1["items"] as? [[String: Any]])
        #expect((events.first?["data"] as? [String: Any])?["text"] as? String == "")
        #expect(events.last?["event"] as? String == "message.redacted")
        await api.stop()
    }

    @Test func templatesStartWithDefaultsAndManagersReplaceThem() async throws {
        let api = try APIFixture()
        let gil = try await api.person(email: "gil@example.org")
        let hal = try await api.person(email: "hal@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Fir"], token: gil.token).1["id"] as? String)
        try await api.addMember(hal.id, to: group, role: "member")
        let defaults = try #require(try await api.call("GET", "/v1/groups/\(group)/templates", token: hal.token).1["templates"] as? [[String: Any]])
        #expect(defaults.contains { $0["text"] as? String == "Alarm going off at my house" && $0["severity"] as? String == "red" })
        #expect(defaults.contains { $0["text"] as? String == "All clear" && $0["kind"] as? String == "chat" })
        let replacement: [String: Any] = ["templates": [["key": "fire", "text": "Fire!", "kind": "alert", "severity": "red"],
                                                        ["key": "thanks", "text": "Thanks all", "kind": "chat"]]]
        #expect(try await api.call("PUT", "/v1/groups/\(group)/templates", replacement, token: hal.token).0 == 403)
        #expect(try await api.call("PUT", "/v1/groups/\(group)/templates", replacement, token: gil.token).0 == 200)
        let now = try await api.call("GET", "/v1/groups/\(group)/templates", token: hal.token).1["templates"] as? [[String: Any]]
        #expect(now?.compactMap { $0["key"] as? String } == ["fire", "thanks"])
        for bad: [[String: Any]] in [[["key": "Bad Key", "text": "x", "kind": "chat"]], [["key": "a", "text": "x", "kind": "chat", "severity": "red"]],
                                     [["key": "a", "text": "x", "kind": "chat"], ["key": "a", "text": "y", "kind": "chat"]]] {
            #expect(try await api.call("PUT", "/v1/groups/\(group)/templates", ["templates": bad], token: gil.token).0 == 400)
        }
        await api.stop()
    }
}
