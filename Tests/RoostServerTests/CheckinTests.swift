import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Testing

/// Check-ins over real sockets and the real database; the scheduler's rounds are run by hand.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct CheckinTests {
    /// Moves a check-in's deadline into the past, as time would.
    func expire(_ api: APIFixture, _ checkin: String) async throws {
        try await api.inTenant { _, connection in
            let id = UUID(uuidString: checkin)!
            try connection.query("UPDATE checkins SET due_at = now() - interval '1 second' WHERE id = \(id)")
            try connection.query("UPDATE checkin_deadlines SET due_at = now() - interval '1 second' WHERE checkin_id = \(id)")
        }
    }

    func missedAlerts(_ api: APIFixture, group: String) async throws -> [String] {
        try await api.inTenant { _, connection in
            try connection.query("""
                SELECT m.text FROM messages m JOIN alerts a USING (tenant_id, group_id, seq)
                WHERE m.group_id = \(UUID(uuidString: group)!) AND m.template = 'missed_checkin' AND a.severity = 'red'
                """).rows.map { try $0.decode(String.self, "text") }
        }
    }

    @Test func aMissedCheckinRaisesExactlyOneRedAlertWithTheLastLocationEvenWithTwoSchedulers() async throws {
        let api = try APIFixture()
        let owner = try await api.person(email: "nia@example.org")
        let walker = try await api.person(email: "oli@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Lane"], token: owner.token).1["id"] as? String)
        try await api.addMember(walker.id, to: group, role: "member")
        #expect(try await api.call("POST", "/v1/me/devices", ["platform": "fcm", "token": "nia-phone"], token: owner.token).0 == 201)
        let (created, checkin) = try await api.call("POST", "/v1/checkins", [
            "group_id": group, "due_in_s": 600, "grace_s": 0, "note": "Walking home through the park", "location": ["lat": 55.1, "lon": 12.1],
        ], token: walker.token)
        #expect(created == 201 && checkin["status"] as? String == "active")
        let id = try #require(checkin["id"] as? String)
        #expect(try await api.call("POST", "/v1/checkins/\(id)/location", ["lat": 55.2, "lon": 12.2, "accuracy_m": 15], token: walker.token).0 == 204)
        try await expire(api, id)

        // Two schedulers race for the same deadline: one alert.
        let pools = (0..<2).map { _ in ConnectionPool(configuration: TestDatabase.configuration(), options: .init(maxConnections: 2)) }
        let schedulers = pools.map { DeadlineScheduler(pool: $0, log: Log(level: .error)) }
        async let first = schedulers[0].runOnce()
        async let second = schedulers[1].runOnce()
        _ = try await (first, second)
        // The end-to-end tests' nodes share this database and may win the race: wait for whoever did.
        try await Poll.until { try await !missedAlerts(api, group: group).isEmpty }
        #expect(try await missedAlerts(api, group: group) == ["Walking home through the park"])
        let alert = try #require((try await api.call("GET", "/v1/groups/\(group)/alerts?status=open", token: owner.token).1["items"] as? [[String: Any]])?.first)
        #expect((alert["location"] as? [String: Any])?["lat"] as? Double == 55.2)
        #expect((alert["author"] as? [String: Any])?["id"] as? String == walker.id)
        #expect((alert["alert"] as? [String: Any])?["severity"] as? String == "red")
        let mine = try #require((try await api.call("GET", "/v1/checkins?status=missed", token: walker.token).1["items"] as? [[String: Any]])?.first)
        #expect(mine["id"] as? String == id && mine["alert_seq"] as? Int == alert["seq"] as? Int)
        let pushes = try await api.inTenant { _, connection in
            try connection.query("SELECT count(*) AS n FROM outbox WHERE channel = 'push' AND recipient = 'nia-phone' AND template = 'alert'")
                .rows[0].decode(Int.self, "n")
        }
        #expect(pushes == 1)
        // The alert is out: a prompt no longer has an answer, and later rounds raise nothing more.
        #expect(try await api.call("POST", "/v1/checkins/\(id)/extend", ["due_in_s": 600], token: walker.token).0 == 409)
        #expect(try await api.call("POST", "/v1/checkins/\(id)/cancel", token: walker.token).0 == 409)
        _ = try await schedulers[0].runOnce()
        #expect(try await missedAlerts(api, group: group).count == 1)
        for pool in pools { pool.close() }
        await api.stop()
    }

    @Test func completingInTimeRaisesNothingAndTellsTheGroup() async throws {
        let api = try APIFixture()
        let pat = try await api.person(email: "pat@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Close"], token: pat.token).1["id"] as? String)
        let id = try #require(try await api.call("POST", "/v1/checkins", ["group_id": group, "due_in_s": 900], token: pat.token).1["id"] as? String)
        let (extended, body) = try await api.call("POST", "/v1/checkins/\(id)/extend", ["due_in_s": 1800], token: pat.token)
        #expect(extended == 200 && body["status"] as? String == "active")
        let (done, completed) = try await api.call("POST", "/v1/checkins/\(id)/complete", token: pat.token)
        #expect(done == 200 && completed["status"] as? String == "completed")
        try await expire(api, id)
        let scheduler = DeadlineScheduler(pool: api.pool, log: Log(level: .error))
        _ = try await scheduler.runOnce()
        #expect(try await missedAlerts(api, group: group).isEmpty)
        let events = try await api.call("GET", "/v1/groups/\(group)/events?after=1", token: pat.token).1["items"] as? [[String: Any]]
        #expect(events?.compactMap { $0["event"] as? String } == ["checkin.started", "checkin.extended", "checkin.completed"])
        #expect((events?.last?["data"] as? [String: Any])?["reason"] as? String == "checked_in")
        #expect((try await api.call("GET", "/v1/checkins?status=active", token: pat.token).1["items"] as? [Any])?.isEmpty == true)
        await api.stop()
    }

    @Test func onlyItsOwnerTouchesACheckinAndLimitsHold() async throws {
        let api = try APIFixture()
        let quin = try await api.person(email: "quin@example.org")
        let rae = try await api.person(email: "rae@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Row"], token: quin.token).1["id"] as? String)
        let id = try #require(try await api.call("POST", "/v1/checkins", ["group_id": group, "due_in_s": 600], token: quin.token).1["id"] as? String)
        // Someone else (not even in the group) sees nothing.
        for (path, body) in [("/v1/checkins/\(id)/location", ["lat": 1, "lon": 2]), ("/v1/checkins/\(id)/extend", ["due_in_s": 900]),
                             ("/v1/checkins/\(id)/complete", [:])] as [(String, [String: Any])] {
            let (status, answer) = try await api.call("POST", path, body, token: rae.token)
            #expect(status == 404 && (answer["error"] as? [String: Any])?["message"] as? String == "no such check-in", "\(path)")
        }
        #expect((try await api.call("GET", "/v1/checkins", token: rae.token).1["items"] as? [Any])?.isEmpty == true)
        #expect(try await api.call("POST", "/v1/checkins", ["group_id": group, "due_in_s": 600], token: rae.token).0 == 404)
        #expect(try await api.call("POST", "/v1/checkins/\(id)/complete", token: nil).0 == 401)
        // Bounds and shape.
        for (body, field) in [(["group_id": group, "due_in_s": 90_000], "due_in_s"), (["group_id": group], "due_in_s"),
                              (["group_id": group, "due_in_s": 600, "due_at": "2026-11-21T18:00:00Z"], "due_in_s"),
                              (["group_id": group, "due_at": "tomorrow"], "due_at"),
                              (["group_id": group, "due_in_s": 600, "location": ["lat": 100, "lon": 0]], "location.lat")] as [([String: Any], String)] {
            let (status, answer) = try await api.call("POST", "/v1/checkins", body, token: quin.token)
            #expect(status == 400 && (answer["error"] as? [String: Any])?["field"] as? String == field, "\(body) → \(status) \(answer)")
        }
        let due = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3600))
        #expect(try await api.call("POST", "/v1/checkins", ["group_id": group, "due_at": due], token: quin.token).0 == 201)
        // At most five active.
        for _ in 0..<3 { #expect(try await api.call("POST", "/v1/checkins", ["group_id": group, "due_in_s": 600], token: quin.token).0 == 201) }
        #expect(try await api.call("POST", "/v1/checkins", ["group_id": group, "due_in_s": 600], token: quin.token).0 == 409)
        await api.stop()
    }
}
