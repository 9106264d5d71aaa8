import Foundation
import RoostPersistence
import RoostProtocol
import RoostTestSupport
@testable import RoostServer
import Testing

/// Check-in PINs and the duress answer (API.md "Check-ins") over the real API, database and
/// stream: what the walker sees of a duress answer is, byte for byte apart from ids, seqs and
/// times, what they see of a safe one; the silent alert reaches everyone else.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct CheckinPinTests {
    typealias Walk = CheckinPhaseTests.Walk
    static let safePIN = "2468"
    static let duressPIN = "13579"

    func setPins(_ walk: Walk, password: String? = nil) async throws -> (Int, [String: Any]) {
        var body: [String: Any] = ["safe_pin": Self.safePIN, "duress_pin": Self.duressPIN]
        if let password { body["current_password"] = password }
        return try await walk.api.call("PUT", "/v1/me/pins", body, token: walk.ben.token)
    }

    /// A raw request as Ben: status, body text and headers, exactly as they came.
    func raw(_ walk: Walk, _ method: String, _ path: String, _ body: [String: Any]) async throws -> TestClient.Response {
        let client = try TestClient(port: walk.api.test.port, receiveTimeoutSeconds: 60)
        let data = try JSONSerialization.data(withJSONObject: body)
        client.send("\(method) \(path) HTTP/1.1\r\nAuthorization: Bearer \(walk.ben.token)\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(data.count)\r\n\r\n" + String(decoding: data, as: UTF8.self))
        return try #require(await client.readResponse())
    }

    /// Ids, times and seqs are a walk's own; everything else must match between walks.
    static func normalized(_ text: String) -> String {
        var text = text
        for (pattern, replacement) in [("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "<id>"),
                                       (#"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z"#, "<time>"),
                                       (#""(seq|last_seq|alert_seq)":\d+"#, "\"$1\":<n>")] {
            text = try! NSRegularExpression(pattern: pattern).stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text),
                                                                                       withTemplate: replacement)
        }
        return text
    }

    /// What Ben's client sees when he ends a walk (`complete` or `cancel`) with `pin`, in a
    /// street of its own: the answer, and every stream frame up to a chat message Ann posts in
    /// each group afterwards (so anything sent in between would be among them).
    struct Seen {
        let walk: Walk
        let checkin: String
        let status: Int
        let body: String
        let headers: [String: String]
        let frames: [String]
    }

    func end(_ answer: String, with pin: String, missedFirst: Bool) async throws -> Seen {
        let walk = try await Walk(stream: true)
        #expect(try await setPins(walk).0 == 204)
        let mum = try #require(try await walk.api.call("POST", "/v1/me/emergency-contacts", ["name": "Mum", "email": "mum@example.org"],
                                                        token: walk.ben.token).1["id"] as? String)
        let confirm = try await walk.api.inTenant { _, connection in
            try connection.query("SELECT data->>'token' AS token FROM outbox WHERE recipient = 'mum@example.org'").rows[0].decode(String.self, "token")
        }
        #expect(try await walk.api.call("POST", "/v1/emergency-contacts/confirm", ["token": confirm]).0 == 200)
        let started = try await walk.start(["group_ids": [walk.elm, walk.oak], "contact_ids": [mum], "due_in_s": 600, "grace_s": 0,
                                            "location": ["lat": 55.67, "lon": 12.56], "battery": 40])
        let id = try #require(started["id"] as? String)
        if missedFirst {
            guard case .missed? = try await walk.round(at: try CheckinPhaseTests.date(started["due_at"]) + 1).first else {
                Issue.record("the walk was not missed")
                return Seen(walk: walk, checkin: id, status: 0, body: "", headers: [:], frames: [])
            }
        }
        let stream = try await StreamTests().stream(walk.api, walk.ben).0
        let response = try await raw(walk, "POST", "/v1/checkins/\(id)/\(answer)", ["pin": pin])
        for group in [walk.elm, walk.oak] { _ = try await StreamTests().post(walk.api, group, "marker", as: walk.ann) }
        var frames: [String] = []
        var markers = 0
        while markers < 2 {
            let frame = try #require(await stream.receiveText(), "the stream ended after \(frames)")
            frames.append(frame)
            if frame.contains("\"text\":\"marker\"") { markers += 1 }
        }
        return Seen(walk: walk, checkin: id, status: response.status, body: response.text,
                    headers: response.headers.filter { ["content-type", "cache-control"].contains($0.key) }, frames: frames)
    }

    @Test(arguments: [("complete", false), ("complete", true), ("cancel", false)])
    func theDuressPINAnswersTheWalkerExactlyLikeTheSafeOne(answer: String, missedFirst: Bool) async throws {
        let safe = try await end(answer, with: Self.safePIN, missedFirst: missedFirst)
        let duress = try await end(answer, with: Self.duressPIN, missedFirst: missedFirst)
        #expect(safe.status == 200 && duress.status == safe.status)
        #expect(Self.normalized(duress.body) == Self.normalized(safe.body), "\(safe.body)\n\(duress.body)")
        #expect(duress.headers == safe.headers)
        #expect(duress.frames.map(Self.normalized) == safe.frames.map(Self.normalized), "\(safe.frames)\n\(duress.frames)")
        let kinds = safe.frames.filter { !$0.contains("\"text\":\"marker\"") }.compactMap { frame in
            (try? JSONSerialization.jsonObject(with: Data(frame.utf8)) as? [String: Any])?["event"] as? String
        }
        let ended = answer == "cancel" ? "checkin.cancelled" : "checkin.completed"
        #expect(kinds == (missedFirst ? ["alert.closed", "alert.closed"] : []) + [ended, ended], "\(safe.frames)")

        // Nothing of it reaches the walker's devices, or any read of theirs.
        let walk = duress.walk
        let benPushes = try await walk.pushes(to: "ben-phone").map(\.template)
        #expect(benPushes == (try await safe.walk.pushes(to: "ben-phone")).map(\.template) && !benPushes.contains("alert"), "\(benPushes)")
        for group in [walk.elm, walk.oak] {
            let (_, events) = try await walk.api.call("GET", "/v1/groups/\(group)/events?after=0&limit=200", token: walk.ben.token)
            let text = String(decoding: try JSONSerialization.data(withJSONObject: events), as: UTF8.self)
            #expect(!text.contains("duress"), "Ben's events: \(text)")
            let (_, alerts) = try await walk.api.call("GET", "/v1/groups/\(group)/alerts", token: walk.ben.token)
            #expect((alerts["items"] as? [[String: Any]])?.contains { $0["template"] as? String == "duress" } == false)
        }
        let (_, open) = try await walk.api.call("GET", "/v1/alerts", token: walk.ben.token)
        #expect((open["items"] as? [[String: Any]])?.isEmpty == true, "\(open)")
        let resumed = try await StreamTests().stream(walk.api, walk.ben, live: false).0
        resumed.sendText("{\"type\":\"resume\",\"cursors\":{\"\(walk.elm)\":0,\"\(walk.oak)\":0}}")
        var replayed: [String] = []
        while let frame = await resumed.receiveText(), !frame.contains("\"type\":\"resumed\"") { replayed.append(frame) }
        #expect(!replayed.isEmpty && !replayed.contains { $0.contains("duress") }, "\(replayed)")

        // Everyone else: the silent red alert, in both groups, pushed; to Mum, a message of her own.
        for (group, person, phone) in [(walk.elm, walk.cy, "cy-phone"), (walk.oak, walk.dee, "dee-phone")] {
            let (_, alerts) = try await walk.api.call("GET", "/v1/groups/\(group)/alerts?status=open", token: person.token)
            let silent = try #require((alerts["items"] as? [[String: Any]])?.first { $0["template"] as? String == "duress" }, "\(alerts)")
            #expect((silent["alert"] as? [String: Any])?["severity"] as? String == "red")
            #expect(((silent["alert"] as? [String: Any])?["details"] as? [String: Any])?["checkin_id"] as? String == duress.checkin)
            let pushed = try await walk.pushes(to: phone)
            #expect(pushed.contains { (($0.data["alert"] as? [String: Any])?["template"] as? String) == "duress" }, "\(pushed.map(\.template))")
            // No all clear went out for a missed walk's alert: the silent alert is what they hear.
            #expect(!pushed.map(\.template).contains("alert_closed"))
            #expect(try await safe.walk.pushes(to: phone).map(\.template).contains("alert_closed") == missedFirst)
        }
        let told = try await EmergencyContactTests().messages(walk, to: "mum@example.org").filter { $0.template == "checkin_alert" }
        #expect(told.last?.data["reason"] as? String == "duress", "\(told.map(\.data))")
        #expect(try await EmergencyContactTests().messages(walk, to: "mum@example.org").contains { $0.template == "checkin_all_clear" } == false)
        await safe.walk.api.stop()
        await walk.api.stop()
    }

    @Test func theSilentAlertAndEverythingAboutItStayHiddenFromTheWalker() async throws {
        let walk = try await Walk(stream: true)
        #expect(try await setPins(walk).0 == 204)
        let id = try #require(try await walk.start(["group_id": walk.elm, "due_in_s": 600])["id"] as? String)
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/complete", ["pin": Self.duressPIN], token: walk.ben.token).0 == 200)
        let (_, alerts) = try await walk.api.call("GET", "/v1/groups/\(walk.elm)/alerts?status=open", token: walk.cy.token)
        let seq = try #require((alerts["items"] as? [[String: Any]])?.first?["seq"] as? Int)
        let stream = try await StreamTests().stream(walk.api, walk.ben).0
        // Cy answers, replies, and shares where she is: the walker hears of none of it.
        #expect(try await walk.api.call("POST", "/v1/groups/\(walk.elm)/alerts/\(seq)/ack", ["response": "on_my_way"], token: walk.cy.token).0 == 200)
        let (replied, reply) = try await walk.api.call("POST", "/v1/groups/\(walk.elm)/messages",
                                                       ["client_msg_id": UUID().uuidString, "kind": "chat", "text": "Coming", "reply_to": seq], token: walk.cy.token)
        #expect(replied == 201, "\(reply)")
        #expect(try await walk.api.call("POST", "/v1/groups/\(walk.elm)/alerts/\(seq)/live-location", ["lat": 55.6, "lon": 12.6],
                                         token: walk.cy.token).0 == 204)
        _ = try await StreamTests().post(walk.api, walk.elm, "marker", as: walk.ann)
        let frame = try #require(await stream.receiveText())
        #expect(frame.contains("\"text\":\"marker\""), "the first frame Ben gets is the marker: \(frame)")
        #expect(try await walk.pushes(to: "ben-phone").isEmpty)
        // The seq is there to be guessed; every request about it is as for a message that does not exist.
        for (method, path, body) in [("GET", "/v1/groups/\(walk.elm)/messages/\(seq)", nil),
                                     ("GET", "/v1/groups/\(walk.elm)/messages/\(seq)/replies", nil),
                                     ("POST", "/v1/groups/\(walk.elm)/alerts/\(seq)/ack", ["response": "seen"]),
                                     ("POST", "/v1/groups/\(walk.elm)/alerts/\(seq)/close", [:]),
                                     ("DELETE", "/v1/groups/\(walk.elm)/messages/\(seq)", nil)] as [(String, String, [String: Any]?)] {
            let (status, answer) = try await walk.api.call(method, path, body, token: walk.ben.token)
            #expect(status == 404, "\(method) \(path) → \(status) \(answer)")
        }
        let (_, messages) = try await walk.api.call("GET", "/v1/groups/\(walk.elm)/messages?limit=100", token: walk.ben.token)
        #expect((messages["items"] as? [[String: Any]])?.map { $0["text"] as? String } == ["marker"], "\(messages)")
        // Cy closes it: still nothing for Ben, while Cy sees it closed.
        #expect(try await walk.api.call("POST", "/v1/groups/\(walk.elm)/alerts/\(seq)/close", ["resolution": "Found him"], token: walk.ann.token).0 == 200)
        _ = try await StreamTests().post(walk.api, walk.elm, "marker 2", as: walk.ann)
        let next = try #require(await stream.receiveText())
        #expect(next.contains("\"text\":\"marker 2\""), "\(next)")
        await walk.api.stop()
    }

    @Test func withPINsArrivingAsksForThePINAndExtendingTakesIt() async throws {
        let walk = try await Walk()
        #expect(try await setPins(walk).0 == 204)
        // Arriving is not an answer: whoever holds the phone may have walked it there.
        let home = ["lat": 55.6761, "lon": 12.5683, "radius_m": 50.0]
        let id = try #require(try await walk.start(["group_id": walk.elm, "due_in_s": 3600, "grace_s": 600, "destination": home])["id"] as? String)
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/location", ["lat": 55.6763, "lon": 12.5683], token: walk.ben.token).0 == 204)
        #expect(try await walk.checkin(id)["status"] as? String == "prompting")
        let prompt = try #require(try await walk.pushes(to: "ben-phone").last { $0.template == "checkin_prompt" })
        #expect((prompt.data["checkin"] as? [String: Any])?["reason"] as? String == "arrived" && prompt.data["critical"] as? Bool == true)
        // Extending takes the PIN like the other answers.
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/extend", ["due_in_s": 600], token: walk.ben.token).1.errorCode == "pin_required")
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/extend", ["due_in_s": 600, "pin": "0000"], token: walk.ben.token).1.errorCode
                == "wrong_pin")
        let (extended, body) = try await walk.api.call("POST", "/v1/checkins/\(id)/extend", ["due_in_s": 600, "pin": Self.safePIN], token: walk.ben.token)
        #expect(extended == 200 && body["status"] as? String == "active", "\(body)")
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/complete", ["pin": Self.safePIN], token: walk.ben.token).0 == 200)

        // The duress PIN extends as asked, and the silent alert goes to the group.
        let forced = try #require(try await walk.start(["group_id": walk.elm, "due_in_s": 3600])["id"] as? String)
        let (answered, shown) = try await walk.api.call("POST", "/v1/checkins/\(forced)/extend", ["due_in_s": 900, "pin": Self.duressPIN],
                                                        token: walk.ben.token)
        #expect(answered == 200 && shown["status"] as? String == "active")
        let (_, alerts) = try await walk.api.call("GET", "/v1/groups/\(walk.elm)/alerts?status=open", token: walk.ann.token)
        let templates = (alerts["items"] as? [[String: Any]] ?? []).compactMap { $0["template"] as? String }
        #expect(templates.contains("duress"), "\(alerts)")
        let (_, own) = try await walk.api.call("GET", "/v1/groups/\(walk.elm)/alerts?status=open", token: walk.ben.token)
        #expect(!String(describing: own).contains("duress"), "the walker sees nothing of it")
        await walk.api.stop()
    }

    @Test func pinsAreDigitsDifferentNeededOnceSetAndThrottledLikeSignIns() async throws {
        let walk = try await Walk()
        for (body, field) in [(["safe_pin": "123", "duress_pin": "4567"], "safe_pin"), (["safe_pin": "123456789", "duress_pin": "4567"], "safe_pin"),
                              (["safe_pin": "12a4", "duress_pin": "4567"], "safe_pin"), (["safe_pin": "1234", "duress_pin": "４５６７"], "duress_pin"),
                              (["safe_pin": "1234", "duress_pin": "1234"], "duress_pin"), (["safe_pin": "1234"], "duress_pin"),
                              (["safe_pin": "1234", "duress_pin": 4567], "duress_pin")] as [([String: Any], String)] {
            let (status, answer) = try await walk.api.call("PUT", "/v1/me/pins", body, token: walk.ben.token)
            #expect(status == 400 && (answer["error"] as? [String: Any])?["field"] as? String == field, "\(body) → \(status) \(answer)")
        }
        // Without PINs, a PIN is an error, and none is needed.
        let first = try #require(try await walk.start(["group_id": walk.elm, "due_in_s": 600])["id"] as? String)
        #expect(try await walk.api.call("POST", "/v1/checkins/\(first)/complete", ["pin": "1234"], token: walk.ben.token).0 == 400)
        #expect(try await walk.api.call("POST", "/v1/checkins/\(first)/complete", token: walk.ben.token).0 == 200)

        #expect(try await setPins(walk).0 == 204)
        let stored = try await walk.api.inTenant { _, connection in
            try connection.query("SELECT safe_hash || duress_hash AS hashes FROM user_pins").rows[0].decode(String.self, "hashes")
        }
        #expect(stored.hasPrefix("$scrypt$") && !stored.contains(Self.safePIN) && !stored.contains(Self.duressPIN))
        let id = try #require(try await walk.start(["group_id": walk.elm, "due_in_s": 600])["id"] as? String)
        for (body, status, code) in [(nil, 403, "pin_required"), (["pin": "12"], 400, "validation_failed"), (["pin": "0000"], 403, "wrong_pin"),
                                     (["pin": "0000", "extra": 1], 400, "validation_failed")] as [([String: Any]?, Int, String)] {
            for answer in ["complete", "cancel"] {
                let (got, error) = try await walk.api.call("POST", "/v1/checkins/\(id)/\(answer)", body, token: walk.ben.token)
                #expect(got == status && (error["error"] as? [String: Any])?["code"] as? String == code, "\(answer) \(String(describing: body)) → \(got) \(error)")
            }
        }
        // Two wrong PINs so far; three more and even the right one waits.
        for _ in 0..<3 { #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/complete", ["pin": "9999"], token: walk.ben.token).0 == 403) }
        let throttled = try await raw(walk, "POST", "/v1/checkins/\(id)/complete", ["pin": Self.safePIN])
        #expect(throttled.status == 429 && Int(throttled.headers["retry-after"] ?? "") ?? 0 > 0, "\(throttled.status) \(throttled.text)")
        #expect(try await walk.checkin(id)["status"] as? String == "active")

        // Replacing PINs takes the password; removing them too (`password`, the field's earlier
        // name, is still read).
        #expect(try await setPins(walk).1.errorCode == "password_required")
        #expect(try await setPins(walk, password: "not the password").1.errorCode == "wrong_password")
        #expect(try await setPins(walk, password: APIFixture.password).0 == 204)
        let (noPassword, refusal) = try await walk.api.call("DELETE", "/v1/me/pins", [:], token: walk.ben.token)
        #expect(noPassword == 403 && refusal.errorCode == "password_required")
        let (wrong, answer) = try await walk.api.call("DELETE", "/v1/me/pins", ["current_password": "wrong one"], token: walk.ben.token)
        #expect(wrong == 403 && answer.errorCode == "wrong_password")
        #expect(try await walk.api.call("DELETE", "/v1/me/pins", ["current_password": APIFixture.password], token: walk.ben.token).0 == 204)
        #expect(try await walk.api.call("DELETE", "/v1/me/pins", ["password": APIFixture.password], token: walk.ben.token).0 == 404)
        await walk.api.stop()
    }
}
