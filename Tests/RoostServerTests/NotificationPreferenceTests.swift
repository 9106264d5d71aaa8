import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Testing

/// `GET/PUT /v1/me/notifications` and what the preferences do to deliveries: severity and chat
/// switches at queueing, quiet hours at sending (on an injected clock), and the email fallback
/// for a red alert that reaches no device.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"), .serialized)
struct NotificationPreferenceTests {
    @Test func defaultsPartialChangesAndBadQuietHours() async throws {
        let api = try APIFixture()
        let ann = try await api.person(email: "ann@example.org")
        let (status, defaults) = try await api.call("GET", "/v1/me/notifications", token: ann.token)
        #expect(status == 200)
        #expect(defaults["push"] as? [String: Bool] == ["chat": false, "amber": true, "red": true, "responses": true])
        #expect(defaults["quiet_hours"] is NSNull && defaults["fallback"] as? [String: Bool] == ["email": true, "sms": true])
        #expect(defaults["share_location_on_unanswered_request"] as? Bool == false)

        let (changed, body) = try await api.call("PUT", "/v1/me/notifications", [
            "push": ["chat": true, "amber": false], "quiet_hours": ["start": "22:00", "end": "07:00", "time_zone": "Europe/Copenhagen"],
        ], token: ann.token)
        #expect(changed == 200, "\(body)")
        #expect(body["push"] as? [String: Bool] == ["chat": true, "amber": false, "red": true, "responses": true])
        #expect(body["quiet_hours"] as? [String: String] == ["start": "22:00", "end": "07:00", "time_zone": "Europe/Copenhagen"])
        let (_, kept) = try await api.call("PUT", "/v1/me/notifications", ["fallback": ["sms": false], "share_location_on_unanswered_request": true],
                                           token: ann.token)
        #expect(kept["push"] as? [String: Bool] == ["chat": true, "amber": false, "red": true, "responses": true], "what a PUT leaves out stays")
        #expect(kept["quiet_hours"] as? [String: String] != nil && kept["fallback"] as? [String: Bool] == ["email": true, "sms": false])
        #expect(try await api.call("GET", "/v1/me/notifications", token: ann.token).1["share_location_on_unanswered_request"] as? Bool == true)

        for bad: [String: Any] in [["start": "24:00", "end": "07:00", "time_zone": "UTC"], ["start": "7:00", "end": "08:00", "time_zone": "UTC"],
                                   ["start": "07:00", "end": "07:00", "time_zone": "UTC"], ["start": "22:00", "end": "07:00", "time_zone": "Mars/Olympus"],
                                   ["start": "22:00"]] {
            let (refused, error) = try await api.call("PUT", "/v1/me/notifications", ["quiet_hours": bad], token: ann.token)
            #expect(refused == 400, "\(bad): \(error)")
        }
        #expect(try await api.call("PUT", "/v1/me/notifications", ["pushes": [:]], token: ann.token).0 == 400)
        let (_, cleared) = try await api.call("PUT", "/v1/me/notifications", ["quiet_hours": NSNull()], token: ann.token)
        #expect(cleared["quiet_hours"] is NSNull)
        await api.stop()
    }

    /// A group of Ann (owner) with Bob, Cy and Dee, each with a phone, on a database of its own.
    struct Neighbourhood {
        let api: APIFixture
        let database: String
        let ann: APIFixture.Person, bob: APIFixture.Person, cy: APIFixture.Person
        let group: String

        init() async throws {
            database = try TestDatabase.makeScratch()
            api = try APIFixture(database: database)
            ann = try await api.person(email: "ann@example.org")
            bob = try await api.person(email: "bob@example.org")
            cy = try await api.person(email: "cy@example.org")
            group = try #require(try await api.call("POST", "/v1/groups", ["name": "Birch Close"], token: ann.token).1["id"] as? String)
            for (person, phone) in [(bob, "bob-phone"), (cy, "cy-phone")] {
                try await api.addMember(person.id, to: group, role: "member")
                #expect(try await api.call("POST", "/v1/me/devices", ["platform": "fcm", "token": phone], token: person.token).0 == 201)
            }
        }

        func alert(_ severity: String, _ id: String) async throws -> Int {
            let (status, body) = try await api.call("POST", "/v1/groups/\(group)/messages", ["client_msg_id": id, "text": "\(severity) at the corner",
                                                                                              "kind": "alert", "severity": severity], token: ann.token)
            #expect(status == 201, "\(body)")
            return try #require(body["seq"] as? Int)
        }

        /// (recipient, template, severity, status, attempts, next attempt) of every outbox row.
        func rows() async throws -> [(to: String, template: String, severity: String?, status: String, attempts: Int, next: Date)] {
            try await api.inTenant { _, connection in
                try connection.query("""
                    SELECT recipient, template, data->'alert'->'alert'->>'severity' AS severity, status, attempts, next_attempt_at
                    FROM outbox WHERE channel <> 'email' OR template = 'alert' ORDER BY created_at, recipient
                    """).rows.map {
                    (try $0.decode(String.self, "recipient"), try $0.decode(String.self, "template"), try $0.decode(String?.self, "severity"),
                     try $0.decode(String.self, "status"), try $0.decode(Int.self, "attempts"), try $0.decode(Date.self, "next_attempt_at"))
                }
            }
        }

        func worker(at now: Date) -> OutboxWorker {
            var options = OutboxWorker.Options()
            options.now = { now }
            return OutboxWorker(pool: api.pool, channels: OutboxWorker.Channels(), options: options, log: Log(level: .error))
        }

        func finish() async {
            await api.stop()
            TestDatabase.dropScratch(database)
        }
    }

    @Test func quietHoursHoldBackAnAmberAlertUntilTheyEndAndLetARedOneThrough() async throws {
        let place = try await Neighbourhood()
        let quiet: [String: Any] = ["quiet_hours": ["start": "22:00", "end": "07:00", "time_zone": "Europe/Copenhagen"]]
        #expect(try await place.api.call("PUT", "/v1/me/notifications", quiet, token: place.bob.token).0 == 200)
        _ = try await place.alert("amber", "a1")
        _ = try await place.alert("red", "r1")
        // 23:30 in Copenhagen (UTC+1 in November).
        let night = try #require(ISO8601DateFormatter().date(from: "2026-11-23T22:30:00Z"))
        try await place.worker(at: night).runOnce()
        let rows = try await place.rows()
        let bobAmber = try #require(rows.first { $0.to == "bob-phone" && $0.severity == "amber" })
        #expect(bobAmber.status == "pending" && bobAmber.attempts == 0, "held back, not an attempt")
        #expect(bobAmber.next == ISO8601DateFormatter().date(from: "2026-11-24T06:00:00Z"), "until 07:00 in Copenhagen: \(bobAmber.next)")
        #expect(rows.first { $0.to == "bob-phone" && $0.severity == "red" }?.status == "delivered", "red comes through")
        #expect(rows.filter { $0.to == "cy-phone" }.allSatisfy { $0.status == "delivered" }, "Cy keeps no quiet hours")
        // Morning: it goes.
        try await place.api.inTenant { _, connection in try connection.query("UPDATE outbox_jobs SET next_attempt_at = now()") }
        let morning = try #require(ISO8601DateFormatter().date(from: "2026-11-24T06:30:00Z"))
        try await place.worker(at: morning).runOnce()
        #expect(try await place.rows().first { $0.to == "bob-phone" && $0.severity == "amber" }?.status == "delivered")
        await place.finish()
    }

    @Test func severityAndChatSwitchesDecideWhatIsQueued() async throws {
        let place = try await Neighbourhood()
        #expect(try await place.api.call("PUT", "/v1/me/notifications", ["push": ["amber": false]], token: place.cy.token).0 == 200)
        #expect(try await place.api.call("PUT", "/v1/me/notifications", ["push": ["chat": true]], token: place.bob.token).0 == 200)
        _ = try await place.alert("amber", "a1")
        _ = try await place.alert("red", "r1")
        let (chat, _) = try await place.api.call("POST", "/v1/groups/\(place.group)/messages", ["client_msg_id": "c1", "text": "Bins go out tonight", "kind": "chat"],
                                                 token: place.ann.token)
        #expect(chat == 201)
        let rows = try await place.rows()
        #expect(rows.filter { $0.to == "cy-phone" }.map(\.severity) == ["red"], "Cy turned amber pushes off")
        #expect(rows.filter { $0.to == "bob-phone" }.map(\.template) == ["alert", "alert", "chat"], "Bob asked for chat")
        // A chatty author's lines push 20 times an hour; the rest wait in the app.
        for line in 2...22 {
            let (posted, _) = try await place.api.call("POST", "/v1/groups/\(place.group)/messages",
                                                       ["client_msg_id": "c\(line)", "text": "line \(line)", "kind": "chat"], token: place.ann.token)
            #expect(posted == 201)
        }
        #expect(try await place.rows().filter { $0.template == "chat" }.count == PostMessage.chatPushesPerAuthorPerHour)
        await place.finish()
    }

    @Test func aRedAlertReachesMembersWithoutAWorkingDeviceByEmailWhenTheyAllowIt() async throws {
        let place = try await Neighbourhood()
        let eve = try await place.api.person(email: "eve@example.org")
        let fay = try await place.api.person(email: "fay@example.org")
        for person in [eve, fay] { try await place.api.addMember(person.id, to: place.group, role: "member") }
        try await place.api.inTenant { _, connection in try connection.query("UPDATE users SET email_verified = true") }
        #expect(try await place.api.call("PUT", "/v1/me/notifications", ["fallback": ["email": false]], token: fay.token).0 == 200)
        _ = try await place.alert("amber", "a1")
        #expect(try await place.rows().filter { $0.template == "alert" && !$0.to.hasSuffix("-phone") }.isEmpty, "amber never falls back")
        _ = try await place.alert("red", "r1")
        let emails = try await place.rows().filter { !$0.to.hasSuffix("-phone") }
        #expect(emails.map(\.to) == ["eve@example.org"], "Eve has no device; Fay turned email fallback off: \(emails.map(\.to))")
        #expect(emails.first?.severity == "red")

        // Bob's only device fails for good: his red alert goes by email, once.
        try await place.api.inTenant { _, connection in
            let failed = try connection.query("""
                UPDATE outbox SET status = 'failed' WHERE recipient = 'bob-phone' AND data->'alert'->'alert'->>'severity' = 'red' RETURNING id
                """).rows[0].decode(UUID.self, "id")
            #expect(try OutboxStore().enqueueFallback(afterFailed: failed, on: connection) == .queued)
            #expect(try OutboxStore().enqueueFallback(afterFailed: failed, on: connection) == OutboxStore.Fallback.none, "once")
            let amber = try connection.query("""
                UPDATE outbox SET status = 'failed' WHERE recipient = 'cy-phone' AND data->'alert'->'alert'->>'severity' = 'amber' RETURNING id
                """).rows[0].decode(UUID.self, "id")
            #expect(try OutboxStore().enqueueFallback(afterFailed: amber, on: connection) == OutboxStore.Fallback.none, "only red falls back")
        }
        #expect(try await place.rows().filter { $0.to == "bob@example.org" }.count == 1)
        await place.finish()
    }
}
