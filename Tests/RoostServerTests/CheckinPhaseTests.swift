import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// Extended check-ins over the real API and database (API.md "Check-ins"): the prompt, the
/// grace and the alert in every watching group with the trail, the all clear, help, cancel,
/// arrival, standing still, the lapse and the deletion of places. The job rounds are driven at
/// chosen times (`CheckinDeadlines.runOnce(now:tenant:)`) over the fixture's own tenant.
@Suite(.serialized, .enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct CheckinPhaseTests {
    /// Ann owns Elm and Oak; Ben walks, watched by both; Cy is in Elm and Dee in Oak, each with a phone.
    struct Walk {
        let api: APIFixture
        let ann: APIFixture.Person
        let ben: APIFixture.Person
        let cy: APIFixture.Person
        let dee: APIFixture.Person
        let elm: String
        let oak: String

        /// `stream`: with `GET /v1/stream` (tests that watch what reaches someone's streams).
        init(stream: Bool = false) async throws {
            api = try APIFixture(stream: stream)
            ann = try await api.person(email: "ann@example.org")
            ben = try await api.person(email: "ben@example.org")
            cy = try await api.person(email: "cy@example.org")
            dee = try await api.person(email: "dee@example.org")
            elm = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm"], token: ann.token).1["id"] as? String)
            oak = try #require(try await api.call("POST", "/v1/groups", ["name": "Oak"], token: ann.token).1["id"] as? String)
            for (person, group) in [(ben, elm), (ben, oak), (cy, elm), (dee, oak)] { try await api.addMember(person.id, to: group, role: "member") }
            for (person, phone) in [(ben, "ben-phone"), (cy, "cy-phone"), (dee, "dee-phone")] {
                #expect(try await api.call("POST", "/v1/me/devices", ["platform": "fcm", "token": phone], token: person.token).0 == 201)
            }
        }

        func start(_ body: [String: Any]) async throws -> [String: Any] {
            let (status, checkin) = try await api.call("POST", "/v1/checkins", body, token: ben.token)
            #expect(status == 201, "\(checkin)")
            return checkin
        }

        /// One round of check-in jobs at `now` over this tenant.
        func round(at now: Date) async throws -> [CheckinDeadlines.Done] {
            let tenant = try await api.inTenant { tenant, _ in tenant }
            return try await CheckinDeadlines(pool: api.pool, runner: JobRunner(metrics: JobMetrics(), log: Log(level: .error)))
                .runOnce(now: now, tenant: tenant)
        }

        func now() async throws -> Date {
            try await api.inTenant { _, connection in try connection.query("SELECT now() AS now").rows[0].decode(Date.self, "now") }
        }

        func checkin(_ id: String) async throws -> [String: Any] {
            let (status, checkin) = try await api.call("GET", "/v1/checkins/\(id)", token: ben.token)
            #expect(status == 200)
            return checkin
        }

        func events(_ group: String, as person: APIFixture.Person) async throws -> [[String: Any]] {
            try #require(try await api.call("GET", "/v1/groups/\(group)/events?after=0&limit=200", token: person.token).1["items"] as? [[String: Any]])
        }

        /// Pushes queued to a device: (template, data).
        func pushes(to device: String) async throws -> [(template: String, data: [String: Any])] {
            let rows = try await api.inTenant { _, connection in
                try connection.query("SELECT template, data::text AS data FROM outbox WHERE recipient = \(device) ORDER BY created_at, id").rows.map {
                    (try $0.decode(String.self, "template"), try $0.decode(String.self, "data"))
                }
            }
            return try rows.map { ($0.0, try JSONSerialization.jsonObject(with: Data($0.1.utf8)) as? [String: Any] ?? [:]) }
        }

        func trailPoints(_ id: String) async throws -> Int {
            try await api.inTenant { _, connection in
                try connection.query("SELECT count(*) AS n FROM checkin_locations WHERE checkin_id = \(UUID(uuidString: id)!)").rows[0].decode(Int.self, "n")
            }
        }
    }

    static func date(_ value: Any?) throws -> Date {
        let text = try #require(value as? String)
        return try #require(APIJSON.date(text))
    }

    @Test func aWalkIsPromptedOnceThenMissedInEveryGroupWithItsTrailAndTheAllClearClosesEveryAlert() async throws {
        let walk = try await Walk()
        let checkin = try await walk.start([
            "group_ids": [walk.elm, walk.oak], "due_in_s": 600, "grace_s": 300, "note": "Walking home from the station",
            "location": ["lat": 55.670, "lon": 12.560], "battery": 80,
        ])
        let id = try #require(checkin["id"] as? String)
        #expect(checkin["status"] as? String == "active" && checkin["group_ids"] as? [String] == [walk.elm, walk.oak])
        #expect(checkin["grace_s"] as? Int == 300 && checkin["battery"] as? Int == 80)
        let due = try Self.date(checkin["due_at"])
        // Each group sees who walks and until when; nobody's phone is told.
        for (group, person) in [(walk.elm, walk.cy), (walk.oak, walk.dee)] {
            let started = try #require(try await walk.events(group, as: person).last)
            #expect(started["event"] as? String == "checkin.started")
            let data = try #require(started["data"] as? [String: Any])
            #expect(data["id"] as? String == id && data["note"] as? String == "Walking home from the station")
            #expect((data["user"] as? [String: Any])?["display_name"] as? String == "ben" && data["due_at"] as? String == checkin["due_at"] as? String)
        }
        #expect(try await walk.pushes(to: "cy-phone").isEmpty)
        // Two more points; the second comes within 15 s of the first and only replaces the newest.
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/location", ["lat": 55.671, "lon": 12.561, "battery": 74], token: walk.ben.token).0 == 204)
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/location", ["lat": 55.672, "lon": 12.562, "accuracy_m": 12, "battery": 73],
                                         token: walk.ben.token).0 == 204)
        #expect(try await walk.trailPoints(id) == 1, "the start's point only: the others came within 15 s of it")
        #expect(try await walk.checkin(id)["battery"] as? Int == 73)

        // Before the deadline nothing happens; at it, one prompt, however many rounds run.
        #expect(try await walk.round(at: due - 1).isEmpty)
        #expect(try await walk.round(at: due + 1) == [.prompted(UUID(uuidString: id)!)])
        #expect(try await walk.round(at: due + 2).isEmpty)
        #expect(try await walk.checkin(id)["status"] as? String == "prompting")
        let prompts = try await walk.pushes(to: "ben-phone")
        #expect(prompts.map(\.template) == ["checkin_prompt"] && prompts.first?.data["critical"] as? Bool == true)
        #expect(try await walk.pushes(to: "cy-phone").isEmpty, "a prompt is the walker's alone")

        // The grace runs from the prompt: the alert goes out at its end, once, in both groups.
        #expect(try await walk.round(at: due + 300).isEmpty)
        let missed = try await walk.round(at: due + 301)
        guard case .missed(_, let alerts)? = missed.first else { Issue.record("no miss: \(missed)"); return }
        #expect(missed.count == 1 && Set(alerts.map { $0.group.uuidString.lowercased() }) == [walk.elm, walk.oak])
        #expect(try await walk.round(at: due + 400).isEmpty)
        #expect(try await walk.checkin(id)["status"] as? String == "missed")
        for (group, person) in [(walk.elm, walk.cy), (walk.oak, walk.dee)] {
            let alert = try #require((try await walk.api.call("GET", "/v1/groups/\(group)/alerts?status=open", token: person.token).1["items"]
                as? [[String: Any]])?.first)
            #expect(alert["template"] as? String == "missed_checkin" && alert["text"] as? String == "Walking home from the station")
            #expect((alert["location"] as? [String: Any])?["lat"] as? Double == 55.672)
            let details = try #require((alert["alert"] as? [String: Any])?["details"] as? [String: Any])
            #expect(details["checkin_id"] as? String == id && details["battery"] as? Int == 73 && details["location_at"] is String)
            #expect((details["trail"] as? [[String: Any]])?.map { $0["lat"] as? Double } == [55.670])
        }
        for phone in ["cy-phone", "dee-phone"] {
            let pushed = try await walk.pushes(to: phone)
            #expect(pushed.map(\.template) == ["alert"], "\(phone)")
            let details = (pushed.first?.data["alert"] as? [String: Any]).flatMap { ($0["alert"] as? [String: Any])?["details"] as? [String: Any] }
            #expect(details?["battery"] as? Int == 73 && details?["trail"] == nil, "the trail stays out of pushes")
        }
        // Answers a missed check-in refuses; locations still come in.
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/extend", ["due_in_s": 600], token: walk.ben.token).0 == 409)
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/cancel", token: walk.ben.token).0 == 409)
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/help", token: walk.ben.token).0 == 409)
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/location", ["lat": 55.68, "lon": 12.57], token: walk.ben.token).0 == 204)

        // Ben checks in after all: both alerts close, which is the all clear to everyone they reached.
        let (done, completed) = try await walk.api.call("POST", "/v1/checkins/\(id)/complete", token: walk.ben.token)
        #expect(done == 200 && completed["status"] as? String == "completed" && completed["reason"] as? String == "checked_in")
        for (group, person, phone) in [(walk.elm, walk.cy, "cy-phone"), (walk.oak, walk.dee, "dee-phone")] {
            let events = try await walk.events(group, as: person).suffix(2)
            #expect(events.map { $0["event"] as? String } == ["alert.closed", "checkin.completed"])
            #expect((events.first?["data"] as? [String: Any])?["resolution"] as? String == "Checked in safe")
            #expect(try await walk.pushes(to: phone).map(\.template) == ["alert", "alert_closed"])
        }
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/complete", token: walk.ben.token).0 == 409)

        // A day after the end the places go: the trail, the newest point, and the trail in the alerts.
        let ended = try Self.date(completed["ended_at"])
        #expect(try await walk.round(at: ended + 3600).isEmpty)
        #expect(try await walk.round(at: ended + CheckinPolicy.retention + 1) == [.purged(UUID(uuidString: id)!)])
        #expect(try await walk.trailPoints(id) == 0)
        let purged = try await walk.checkin(id)
        #expect(purged["location"] is NSNull && purged["battery"] is NSNull && purged["status"] as? String == "completed")
        let alert = try #require((try await walk.api.call("GET", "/v1/groups/\(walk.elm)/alerts", token: walk.cy.token).1["items"]
            as? [[String: Any]])?.first)
        #expect(((alert["alert"] as? [String: Any])?["details"] as? [String: Any])?["trail"] == nil)
        let created = try #require(try await walk.events(walk.elm, as: walk.cy).first { $0["event"] as? String == "message.created" })
        #expect((((created["data"] as? [String: Any])?["alert"] as? [String: Any])?["details"] as? [String: Any])?["trail"] == nil)
        #expect(try await walk.round(at: ended + 3 * CheckinPolicy.retention).isEmpty, "the job is gone")
        await walk.api.stop()
    }

    /// "Walking now": a group's members see each walk it watches, with its trail, and every new
    /// trail point on their streams; another group and outsiders see nothing of it.
    @Test func watchersSeeTheirGroupsWalksWithTheTrailAndEachNewPointLive() async throws {
        let walk = try await Walk(stream: true)
        let (cyStream, _) = try await StreamTests().stream(walk.api, walk.cy)
        let checkin = try await walk.start([
            "group_ids": [walk.elm], "due_in_s": 600, "note": "Station to home", "location": ["lat": 55.670, "lon": 12.560], "battery": 80,
        ])
        let id = try #require(checkin["id"] as? String)
        func walks(_ group: String, as person: APIFixture.Person) async throws -> (Int, [[String: Any]]) {
            let (status, body) = try await walk.api.call("GET", "/v1/groups/\(group)/checkins", token: person.token)
            return (status, body["items"] as? [[String: Any]] ?? [])
        }
        let (status, seen) = try await walks(walk.elm, as: walk.cy)
        #expect(status == 200 && seen.count == 1)
        let first = try #require(seen.first)
        #expect(first["id"] as? String == id && first["status"] as? String == "active" && first["note"] as? String == "Station to home")
        #expect((first["user"] as? [String: Any])?["display_name"] as? String == "ben" && first["battery"] as? Int == 80)
        #expect(first["due_at"] as? String == checkin["due_at"] as? String && first["alert_seq"] is NSNull)
        #expect((first["trail"] as? [[String: Any]])?.map { $0["lat"] as? Double } == [55.670])
        let (oakStatus, oakWalks) = try await walks(walk.oak, as: walk.dee)
        #expect(oakStatus == 200 && oakWalks.isEmpty, "Oak does not watch this walk")
        #expect(try await walks(walk.elm, as: walk.dee).0 == 404, "Dee is not in Elm")

        // The next point 15 s on joins the trail and reaches Elm's streams; Ben's trail time is moved back instead of waiting.
        try await walk.api.inTenant { _, connection in
            try connection.query("UPDATE checkins SET trail_at = trail_at - interval '20 seconds' WHERE id = \(UUID(uuidString: id)!)")
        }
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/location", ["lat": 55.672, "lon": 12.562, "accuracy_m": 9, "battery": 77],
                                         token: walk.ben.token).0 == 204)
        var frame = try #require(await cyStream.receiveJSON())
        while frame["type"] as? String == "event" { frame = try #require(await cyStream.receiveJSON()) }
        #expect(frame["type"] as? String == "notice" && frame["event"] as? String == "checkin.moved")
        let moved = try #require(frame["data"] as? [String: Any])
        #expect(moved["checkin_id"] as? String == id && moved["group_id"] as? String == walk.elm && moved["user_id"] as? String == walk.ben.id)
        #expect(moved["lat"] as? Double == 55.672 && moved["accuracy_m"] as? Double == 9 && moved["battery"] as? Int == 77 && moved["at"] is String)
        let later = try #require(try await walks(walk.elm, as: walk.cy).1.first)
        #expect((later["trail"] as? [[String: Any]])?.map { $0["lat"] as? Double } == [55.670, 55.672])
        #expect((later["location"] as? [String: Any])?["lat"] as? Double == 55.672 && later["battery"] as? Int == 77)

        // Home safe: the walk leaves the list.
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/complete", token: walk.ben.token).0 == 200)
        #expect(try await walks(walk.elm, as: walk.cy).1.isEmpty)
        await walk.api.stop()
    }

    @Test func helpCancelArrivalAndStandingStill() async throws {
        let walk = try await Walk()
        // "I need help": the alert at once, in both groups; the answer is the first group's.
        let helped = try #require(try await walk.start(["group_ids": [walk.elm, walk.oak], "due_in_s": 3600])["id"] as? String)
        let (status, alert) = try await walk.api.call("POST", "/v1/checkins/\(helped)/help", ["location": ["lat": 55.7, "lon": 12.6]],
                                                      token: walk.ben.token)
        #expect(status == 201 && alert["template"] as? String == "help" && alert["group_id"] as? String == walk.elm)
        #expect(alert["text"] as? String == "I need help" && (alert["alert"] as? [String: Any])?["severity"] as? String == "red")
        #expect(try await walk.checkin(helped)["status"] as? String == "escalated")
        #expect(try await walk.pushes(to: "dee-phone").map(\.template) == ["alert"])
        #expect(try await walk.api.call("POST", "/v1/checkins/\(helped)/help", token: walk.ben.token).0 == 409)
        // The escalated check-in's job waits for the lapse, a day later, and then it ends by itself.
        let alerted = try Self.date(try await walk.checkin(helped)["alerted_at"])
        #expect(try await walk.round(at: alerted + 3600).isEmpty)
        #expect(try await walk.round(at: alerted + CheckinPolicy.alertLifetime + 1) == [.lapsed(UUID(uuidString: helped)!)])
        let lapsed = try await walk.checkin(helped)
        #expect(lapsed["status"] as? String == "escalated" && lapsed["reason"] as? String == "lapsed")
        #expect(try await walk.api.call("POST", "/v1/checkins/\(helped)/complete", token: walk.ben.token).0 == 409)

        // Cancelled before any alert: an event, no push, no alert.
        let cancelled = try #require(try await walk.start(["group_id": walk.elm, "due_in_s": 3600])["id"] as? String)
        let (cancelStatus, cancelledBody) = try await walk.api.call("POST", "/v1/checkins/\(cancelled)/cancel", token: walk.ben.token)
        #expect(cancelStatus == 200 && cancelledBody["status"] as? String == "cancelled")
        #expect(try await walk.events(walk.elm, as: walk.cy).last?["event"] as? String == "checkin.cancelled")
        let cyPushes = try await walk.pushes(to: "cy-phone")
        #expect(cyPushes.map(\.template) == ["alert"], "only the help alert reached Cy: \(cyPushes)")

        // Arriving: a point inside the destination completes the walk by itself.
        let home = ["lat": 55.6761, "lon": 12.5683, "radius_m": 50.0]
        let arriving = try #require(try await walk.start(["group_id": walk.elm, "due_in_s": 3600, "destination": home])["id"] as? String)
        #expect(try await walk.api.call("POST", "/v1/checkins/\(arriving)/location", ["lat": 55.6800, "lon": 12.5683], token: walk.ben.token).0 == 204)
        #expect(try await walk.checkin(arriving)["status"] as? String == "active", "430 m away")
        #expect(try await walk.api.call("POST", "/v1/checkins/\(arriving)/location", ["lat": 55.6763, "lon": 12.5683], token: walk.ben.token).0 == 204)
        let arrived = try await walk.checkin(arriving)
        #expect(arrived["status"] as? String == "completed" && arrived["reason"] as? String == "arrived")
        let completedEvent = try #require(try await walk.events(walk.elm, as: walk.cy).last)
        #expect(completedEvent["event"] as? String == "checkin.completed" && (completedEvent["data"] as? [String: Any])?["reason"] as? String == "arrived")

        // Standing still: within 50 m for stall_after_s prompts long before the deadline; moving pushes it back.
        let still = try await walk.start(["group_id": walk.elm, "due_in_s": 3600, "stall_after_s": 120, "location": ["lat": 55.6, "lon": 12.6]])
        let stillID = try #require(still["id"] as? String)
        let started = try Self.date(still["created_at"])
        #expect(try await walk.round(at: started + 60).isEmpty)
        #expect(try await walk.api.call("POST", "/v1/checkins/\(stillID)/location", ["lat": 55.6002, "lon": 12.6], token: walk.ben.token).0 == 204)
        #expect(try await walk.round(at: started + 121) == [.prompted(UUID(uuidString: stillID)!)], "22 m is standing still")
        // The prompt is answered with more time: active again, counted as having moved.
        #expect(try await walk.api.call("POST", "/v1/checkins/\(stillID)/extend", ["due_in_s": 1800], token: walk.ben.token).1["status"] as? String
            == "active")
        let moved = try await walk.start(["group_id": walk.elm, "due_in_s": 3600, "stall_after_s": 120, "location": ["lat": 55.5, "lon": 12.6]])
        let movedID = try #require(moved["id"] as? String)
        // As if Ben had stood at the start for 100 s (and the job were due 20 s from now).
        try await walk.api.inTenant { _, connection in
            let id = UUID(uuidString: movedID)!
            try connection.query("UPDATE checkins SET still_since = now() - interval '100 seconds' WHERE id = \(id)")
            try connection.query("UPDATE checkin_deadlines SET due_at = now() + interval '20 seconds' WHERE checkin_id = \(id)")
        }
        #expect(try await walk.api.call("POST", "/v1/checkins/\(movedID)/location", ["lat": 55.501, "lon": 12.6], token: walk.ben.token).0 == 204)
        let movedAt = try await walk.now()
        let movedPrompt = CheckinDeadlines.Done.prompted(UUID(uuidString: movedID)!)
        let early = try await walk.round(at: movedAt + 30)
        #expect(!early.contains(movedPrompt), "111 m is moving: the 120 s start again from the move")
        let late = try await walk.round(at: movedAt + 121)
        #expect(late.contains(movedPrompt), "\(late)")
        await walk.api.stop()
    }

    @Test func badInputOnEveryNewField() async throws {
        let walk = try await Walk()
        let other = try APIFixture()
        let stranger = try await other.person(email: "eve@example.org")
        let foreign = try #require(try await other.call("POST", "/v1/groups", ["name": "Elsewhere"], token: stranger.token).1["id"] as? String)
        let notMine = try #require(try await walk.api.call("POST", "/v1/groups", ["name": "Private"], token: walk.cy.token).1["id"] as? String)
        for group in [foreign, notMine, UUID().uuidString] {
            let (status, body) = try await walk.api.call("POST", "/v1/checkins", ["group_ids": [walk.elm, group], "due_in_s": 600], token: walk.ben.token)
            #expect(status == 404, "\(body)")
        }
        let cases: [([String: Any], String)] = [
            (["group_ids": [walk.elm], "due_in_s": 600, "grace_s": -1], "grace_s"),
            (["group_ids": [walk.elm], "due_in_s": 600, "grace_s": 3601], "grace_s"),
            (["group_ids": [walk.elm], "due_in_s": 600, "stall_after_s": 59], "stall_after_s"),
            (["group_ids": [walk.elm], "due_in_s": 600, "destination": ["lat": 55, "lon": 12, "radius_m": -5]], "destination.radius_m"),
            (["group_ids": [walk.elm], "due_in_s": 600, "destination": ["lat": 95, "lon": 12, "radius_m": 50]], "destination.lat"),
            (["group_ids": [walk.elm], "due_in_s": 600, "battery": 101], "battery"),
            (["group_ids": [], "due_in_s": 600], "group_ids"),
            (["group_ids": (0..<6).map { _ in UUID().uuidString }, "due_in_s": 600], "group_ids"),
            (["group_id": walk.elm, "group_ids": [walk.elm], "due_in_s": 600], "group_ids"),
            (["due_in_s": 600], "group_ids"),
        ]
        for (body, field) in cases {
            let (status, answer) = try await walk.api.call("POST", "/v1/checkins", body, token: walk.ben.token)
            #expect(status == 400 && (answer["error"] as? [String: Any])?["field"] as? String == field, "\(body) → \(status) \(answer)")
        }
        let id = try #require(try await walk.start(["group_ids": [walk.elm, walk.elm], "due_in_s": 600])["id"] as? String)
        #expect(try await walk.checkin(id)["group_ids"] as? [String] == [walk.elm], "a group named twice watches once")
        for (body, field) in [(["lat": 55, "lon": 12, "battery": -1], "battery"), (["lat": 55, "lon": 200], "location.lon"),
                              (["lat": 55, "lon": 12, "extra": 1], "extra")] as [([String: Any], String)] {
            let (status, answer) = try await walk.api.call("POST", "/v1/checkins/\(id)/location", body, token: walk.ben.token)
            #expect(status == 400 && (answer["error"] as? [String: Any])?["field"] as? String == field, "\(body) → \(status) \(answer)")
        }
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/help", ["note": ""], token: walk.ben.token).0 == 400)
        // Someone else's check-in is 404 for every answer, and so is another tenant's caller.
        for path in ["cancel", "help", "complete"] {
            #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/\(path)", token: walk.cy.token).0 == 404)
            #expect(try await other.call("POST", "/v1/checkins/\(id)/\(path)", token: stranger.token).0 == 404)
        }
        #expect(try await walk.api.call("GET", "/v1/checkins/\(id)", token: walk.cy.token).0 == 404)

        // A flood of locations: every one answered, the trail coalesced to one point per 15 s.
        let (port, token) = (walk.api.test.port, walk.ben.token)
        let statuses = try await withThrowingTaskGroup(of: [Int].self) { tasks in
            for _ in 0..<4 {
                tasks.addTask {
                    let client = try APIClient(port: port)
                    var statuses: [Int] = []
                    for index in 0..<100 {
                        statuses.append(try await client.call("POST", "/v1/checkins/\(id)/location",
                                                              ["lat": 55 + Double(index) / 10_000, "lon": 12, "battery": 50], token: token).0)
                    }
                    return statuses
                }
            }
            return try await tasks.reduce(into: []) { $0 += $1 }
        }
        #expect(statuses.count == 400 && statuses.allSatisfy { $0 == 204 }, "\(Set(statuses))")
        #expect(try await walk.trailPoints(id) <= 2, "400 points in a few seconds keep one or two")
        await other.stop()
        await walk.api.stop()
    }
}
