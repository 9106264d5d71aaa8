import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// API.md "Incidents": what a client needs to draw an alert's screen and a chat list (one
/// message with its receipts, replies, read markers, unread counts), over real sockets and the
/// real database.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct IncidentTests {
    typealias Person = APIFixture.Person

    /// An owner, two members (one with a device, so alerts are pushed to them) and their group.
    struct Street {
        let api: APIFixture
        let owner: Person
        let ben: Person
        let cy: Person
        let group: String

        /// With `database`, on that scratch database (no other test's node shares it).
        init(stream: Bool = false, database: String? = nil) async throws {
            api = try APIFixture(stream: stream, database: database)
            owner = try await api.person(email: "ann@example.org")
            ben = try await api.person(email: "ben@example.org")
            cy = try await api.person(email: "cy@example.org")
            group = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm Street"], token: owner.token).1["id"] as? String)
            try await api.addMember(ben.id, to: group, role: "member")
            try await api.addMember(cy.id, to: group, role: "member")
            #expect(try await api.call("POST", "/v1/me/devices", ["platform": "fcm", "token": "ben-phone"], token: ben.token).0 == 201)
        }

        func post(_ text: String, kind: String = "chat", severity: String? = nil, replyTo: Int? = nil, as person: Person) async throws -> Int {
            var body: [String: Any] = ["client_msg_id": UUID().uuidString, "text": text, "kind": kind]
            if let severity { body["severity"] = severity }
            if let replyTo { body["reply_to"] = replyTo }
            let (status, message) = try await api.call("POST", "/v1/groups/\(group)/messages", body, token: person.token)
            #expect(status == 201, "\(message)")
            return try #require(message["seq"] as? Int)
        }

        func summary(of person: Person) async throws -> [String: Any] {
            let items = try await api.call("GET", "/v1/groups", token: person.token).1["items"] as? [[String: Any]]
            return try #require(items?.first { $0["id"] as? String == group })
        }
    }

    @Test func anAlertsDetailCountsItsMembersPushesSightingsAndAnswers() async throws {
        let street = try await Street()
        let seq = try await street.post("Smoke behind no. 4", kind: "alert", severity: "red", as: street.owner)
        let path = "/v1/groups/\(street.group)/messages/\(seq)"
        var (status, detail) = try await street.api.call("GET", path, token: street.cy.token)
        #expect(status == 200 && detail["seq"] as? Int == seq && detail["text"] as? String == "Smoke behind no. 4")
        var alert = try #require(detail["alert"] as? [String: Any])
        #expect(alert["escalation_level"] as? Int == 0)
        // Three members; Ben alone has a device (the author is never pushed); nobody has seen or answered.
        #expect(alert["receipts"] as? [String: Int] == ["members": 3, "pushed": 1, "seen": 0, "acknowledged": 0])

        #expect(try await street.api.call("POST", "/v1/groups/\(street.group)/read", ["seq": seq], token: street.cy.token).0 == 204)
        #expect(try await street.api.call("POST", "/v1/groups/\(street.group)/alerts/\(seq)/ack", ["response": "on_my_way"],
                                          token: street.ben.token).0 == 200)
        (status, detail) = try await street.api.call("GET", path, token: street.owner.token)
        alert = try #require(detail["alert"] as? [String: Any])
        #expect(alert["receipts"] as? [String: Int] == ["members": 3, "pushed": 1, "seen": 2, "acknowledged": 1])
        let acks = try #require(alert["acks"] as? [[String: Any]])
        #expect(acks.count == 1 && acks[0]["user_id"] as? String == street.ben.id && acks[0]["display_name"] as? String == "ben")

        // A chat message has no alert object; a seq that is not there, another group, a non-member: 404.
        let chat = try await street.post("All fine now", as: street.ben)
        (status, detail) = try await street.api.call("GET", "/v1/groups/\(street.group)/messages/\(chat)", token: street.cy.token)
        #expect(status == 200 && detail["alert"] is NSNull)
        #expect(try await street.api.call("GET", "/v1/groups/\(street.group)/messages/999", token: street.cy.token).0 == 404)
        let stranger = try await street.api.person(email: "dee@example.org")
        #expect(try await street.api.call("GET", path, token: stranger.token).0 == 404)
        #expect(try await street.api.call("GET", "/v1/groups/\(UUID().uuidString.lowercased())/messages/\(seq)", token: street.cy.token).0 == 404)
        await street.api.stop()
    }

    @Test func repliesComeOldestFirstInPagesWithACursor() async throws {
        let street = try await Street()
        let alert = try await street.post("Van idling outside no. 9", kind: "alert", as: street.owner)
        let other = try await street.post("Unrelated", as: street.cy)
        var replies: [Int] = []
        for (index, person) in [street.ben, street.cy, street.ben, street.owner, street.cy].enumerated() {
            replies.append(try await street.post("Reply \(index)", replyTo: alert, as: person))
        }
        _ = try await street.post("Reply elsewhere", replyTo: other, as: street.ben)
        var seen: [Int] = []
        var after = 0
        for _ in 0..<4 {
            let (status, page) = try await street.api.call("GET", "/v1/groups/\(street.group)/messages/\(alert)/replies?limit=2&after=\(after)",
                                                           token: street.cy.token)
            #expect(status == 200)
            let items = try #require(page["items"] as? [[String: Any]])
            seen += items.compactMap { $0["seq"] as? Int }
            #expect(items.allSatisfy { $0["reply_to"] as? Int == alert })
            guard let next = page["next"] as? String else { break }
            after = try #require(Int(next))
        }
        #expect(seen == replies)
        #expect(try await street.api.call("GET", "/v1/groups/\(street.group)/messages/12345/replies", token: street.cy.token).0 == 404)
        let bad = try await street.api.call("GET", "/v1/groups/\(street.group)/messages/\(alert)/replies?after=-1", token: street.cy.token)
        #expect(bad.0 == 400 && (bad.1["error"] as? [String: Any])?["field"] as? String == "after")
        await street.api.stop()
    }

    @Test func readMarkersMoveForwardOnlyAndTheListCountsWhatIsUnread() async throws {
        let street = try await Street()
        var summary = try await street.summary(of: street.cy)
        #expect(summary["unread"] as? Int == 0 && summary["unread_alerts"] as? Int == 0)
        #expect(summary["last_message"] is NSNull, "no message yet (member.joined events are not messages)")
        let first = try await street.post("Bins go out tonight", as: street.owner)
        let alert = try await street.post("Gate left open", kind: "alert", as: street.ben)
        let long = String(repeating: "Ø", count: 200)
        let last = try await street.post(long, as: street.cy)
        summary = try await street.summary(of: street.cy)
        // Cy's own message is not unread for Cy.
        #expect(summary["unread"] as? Int == 2 && summary["unread_alerts"] as? Int == 1)
        let lastMessage = try #require(summary["last_message"] as? [String: Any])
        #expect(lastMessage["seq"] as? Int == last && lastMessage["kind"] as? String == "chat" && lastMessage["author_name"] as? String == "cy")
        #expect((lastMessage["text"] as? String)?.count == 140)

        let read = "/v1/groups/\(street.group)/read"
        #expect(try await street.api.call("POST", read, ["seq": alert], token: street.cy.token).0 == 204)
        summary = try await street.summary(of: street.cy)
        #expect(summary["unread"] as? Int == 0 && summary["unread_alerts"] as? Int == 0)
        // Never back, never past the newest seq.
        #expect(try await street.api.call("POST", read, ["seq": first], token: street.cy.token).0 == 204)
        #expect(try await street.api.call("POST", read, ["seq": 1_000_000], token: street.owner.token).0 == 204)
        let markers = try await street.api.inTenant { _, connection in
            try connection.query("SELECT u.email, m.read_seq FROM memberships m JOIN users u ON u.id = m.user_id ORDER BY u.email").rows.map {
                (try $0.decode(String.self, "email"), try $0.decode(Int64.self, "read_seq"))
            }
        }
        let byEmail = Dictionary(uniqueKeysWithValues: markers)
        #expect(byEmail["cy@example.org"] == Int64(alert) && byEmail["ann@example.org"] == Int64(last))
        // Bad input and non-members.
        for body: [String: Any] in [["seq": -1], ["seq": "3"], [:], ["seq": 1, "extra": true]] {
            let (status, answer) = try await street.api.call("POST", read, body, token: street.cy.token)
            #expect(status == 400, "\(body): \(answer)")
        }
        let stranger = try await street.api.person(email: "dee@example.org")
        #expect(try await street.api.call("POST", read, ["seq": 1], token: stranger.token).0 == 404)
        await street.api.stop()
    }

    @Test func aMovedReadMarkerReachesTheReadersOtherStreamsOnly() async throws {
        let street = try await Street(stream: true)
        let seq = try await street.post("Parcel at no. 2", as: street.owner)
        let phone = try await StreamTests().stream(street.api, street.cy)
        let laptop = try await StreamTests().stream(street.api, street.cy)
        let others = try await StreamTests().stream(street.api, street.ben)
        #expect(try await street.api.call("POST", "/v1/groups/\(street.group)/read", ["seq": seq], token: street.cy.token).0 == 204)
        for (client, _) in [phone, laptop] {
            let notice = try await StreamTests().next(client, "notice")
            #expect(notice["event"] as? String == "read.updated")
            let data = notice["data"] as? [String: Any]
            #expect(data?["group_id"] as? String == street.group && data?["seq"] as? Int == seq && data?.count == 2)
        }
        // A read that moves nothing says nothing; Ben's stream hears none of it (its next frame is Ben's own event).
        #expect(try await street.api.call("POST", "/v1/groups/\(street.group)/read", ["seq": seq], token: street.cy.token).0 == 204)
        let next = try await street.post("Thanks", as: street.ben)
        let event = try await StreamTests().next(others.0)
        #expect(event["seq"] as? Int == next)
        #expect(try await StreamTests().next(phone.0)["seq"] as? Int == next)
        await street.api.stop()
    }

    /// The pushes queued so far: (device token, template, data).
    func pushes(_ street: Street) async throws -> [(to: String, template: String, data: [String: Any])] {
        try await street.api.inTenant { _, connection in
            try connection.query("SELECT recipient, template, data::text AS data FROM outbox WHERE channel = 'push' ORDER BY created_at, id").rows.map {
                (try $0.decode(String.self, "recipient"), try $0.decode(String.self, "template"), try $0.decode(String.self, "data"))
            }
        }.map { ($0.0, $0.1, (try? JSONSerialization.jsonObject(with: Data($0.2.utf8)) as? [String: Any]) ?? [:]) }
    }

    @Test func theAuthorHearsEveryAnswerAndEveryonePushedHearsTheAllClearWithinLimits() async throws {
        let street = try await Street()
        #expect(try await street.api.call("POST", "/v1/me/devices", ["platform": "apns", "token": "ann-phone"], token: street.owner.token).0 == 201)
        let seq = try await street.post("Smoke behind no. 4", kind: "alert", severity: "red", as: street.owner)
        let alertPath = "/v1/groups/\(street.group)/alerts/\(seq)"
        #expect(try await pushes(street).map(\.to) == ["ben-phone"], "the alert itself: Ben's device, never the author's")

        // An answer and a reply reach the author's device; the author's own answer does not.
        #expect(try await street.api.call("POST", alertPath + "/ack", ["response": "on_my_way", "note": "2 min"], token: street.ben.token).0 == 200)
        let reply = try await street.post("I can see it from my window", replyTo: seq, as: street.cy)
        #expect(try await street.api.call("POST", alertPath + "/ack", ["response": "seen"], token: street.owner.token).0 == 200)
        var responses = try await pushes(street).filter { $0.template == "alert_response" }
        #expect(responses.count == 2 && responses.allSatisfy { $0.to == "ann-phone" })
        #expect((responses[0].data["responder"] as? [String: Any])?["id"] as? String == street.ben.id)
        #expect(responses[0].data["response"] as? String == "on_my_way" && responses[0].data["note"] as? String == "2 min")
        #expect(responses[0].data["seq"] as? Int == seq && responses[0].data["group_name"] as? String == "Elm Street")
        #expect((responses[1].data["reply"] as? [String: Any])?["seq"] as? Int == reply && responses[1].data["response"] is NSNull)

        // Ben flips his answer again and again: the answers are all kept, the author's phone rings at most five times for him.
        for answer in ["seen", "cannot_help", "on_my_way", "seen", "cannot_help", "on_my_way"] {
            #expect(try await street.api.call("POST", alertPath + "/ack", ["response": answer], token: street.ben.token).0 == 200)
        }
        responses = try await pushes(street).filter { $0.template == "alert_response" }
        let fromBen = responses.filter { ($0.data["responder"] as? [String: Any])?["id"] as? String == street.ben.id }
        #expect(fromBen.count == AlertPushes.responsesPerResponderPerHour)

        // The all clear goes to everyone pushed the alert (Ben), with the resolution; reopening pushes the alert again.
        #expect(try await street.api.call("POST", alertPath + "/close", ["resolution": "A bonfire, put out"], token: street.owner.token).0 == 200)
        #expect(try await street.api.call("POST", alertPath + "/reopen", token: street.owner.token).0 == 200)
        var status = try await pushes(street).filter { $0.template == "alert_closed" || ($0.template == "alert" && $0.data["seq"] != nil) }
        #expect(status.map(\.template) == ["alert_closed", "alert"] && status.allSatisfy { $0.to == "ben-phone" })
        let closedAlert = (status[0].data["alert"] as? [String: Any]).flatMap { $0["alert"] as? [String: Any] }
        #expect(closedAlert?["resolution"] as? String == "A bonfire, put out")
        #expect((closedAlert?["closed_by"] as? [String: Any])?["display_name"] as? String == "ann", "closed_by names who closed it")
        // Closing and reopening over and over changes the alert each time but pushes at most three times an hour.
        for _ in 0..<3 {
            #expect(try await street.api.call("POST", alertPath + "/close", token: street.owner.token).0 == 200)
            #expect(try await street.api.call("POST", alertPath + "/reopen", token: street.owner.token).0 == 200)
        }
        status = try await pushes(street).filter { $0.template == "alert_closed" || ($0.template == "alert" && $0.data["seq"] != nil) }
        #expect(status.count == AlertPushes.statusPushesPerAlertPerHour)
        await street.api.stop()
    }
}
