import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
import RoostTestSupport
@testable import RoostServer
import Testing

/// Check-in requests (API.md "Check-ins") over the real API, database and stream: "are you
/// OK?" pushed to a co-member, answered safe or with a call for help, or expired with the
/// addressee's place shared only when they allow it; throttled, and 404 for anyone outside.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct CheckinRequestTests {
    typealias Walk = CheckinPhaseTests.Walk

    func ask(_ walk: Walk, _ addressee: APIFixture.Person, in group: String, as asker: APIFixture.Person,
             _ extra: [String: Any] = [:]) async throws -> (Int, [String: Any]) {
        var body: [String: Any] = ["user_id": addressee.id, "group_id": group]
        body.merge(extra) { $1 }
        return try await walk.api.call("POST", "/v1/checkin-requests", body, token: asker.token)
    }

    /// Rounds of request expiries at `now`, over the walk's tenant.
    func expire(_ walk: Walk, at now: Date) async throws -> [UUID] {
        let tenant = try await walk.api.inTenant { tenant, _ in tenant }
        return try await CheckinRequestExpiries(pool: walk.api.pool, runner: JobRunner(metrics: JobMetrics(), log: Log(level: .error)))
            .runOnce(now: now, tenant: tenant)
    }

    @Test func aRequestIsPushedAndAnsweredSafeOrWithACallForHelpAndTheAskerHears() async throws {
        let walk = try await Walk(stream: true)
        let benStream = try await StreamTests().stream(walk.api, walk.ben).0
        let cyStream = try await StreamTests().stream(walk.api, walk.cy).0
        let (status, request) = try await ask(walk, walk.ben, in: walk.elm, as: walk.cy, ["note": "Your door is open"])
        #expect(status == 201 && request["status"] as? String == "pending" && request["note"] as? String == "Your door is open", "\(request)")
        let id = try #require(request["id"] as? String)
        let created = try CheckinPhaseTests.date(request["created_at"]), expires = try CheckinPhaseTests.date(request["expires_at"])
        #expect(abs(expires.timeIntervalSince(created) - 300) < 1)
        #expect((request["requester"] as? [String: Any])?["display_name"] as? String == "cy")
        // Ben hears of it on his phone and his streams; one question at a time from Cy.
        #expect(try await walk.pushes(to: "ben-phone").map(\.template) == ["checkin_request"])
        let received = try #require(await benStream.receiveJSON())
        #expect(received["type"] as? String == "notice" && received["event"] as? String == "checkin_request.received")
        #expect((received["data"] as? [String: Any])?["id"] as? String == id)
        #expect(try await ask(walk, walk.ben, in: walk.elm, as: walk.cy).0 == 409)
        let inbox = try await walk.api.call("GET", "/v1/checkin-requests?role=received", token: walk.ben.token).1["items"] as? [[String: Any]]
        #expect(inbox?.map { $0["id"] as? String } == [id])
        let sent = try await walk.api.call("GET", "/v1/checkin-requests?role=sent", token: walk.cy.token).1["items"] as? [[String: Any]]
        #expect(sent?.map { $0["id"] as? String } == [id])
        #expect((try await walk.api.call("GET", "/v1/checkin-requests?role=sent", token: walk.ben.token).1["items"] as? [[String: Any]])?.isEmpty == true)

        // Safe: Cy hears it (push and notice); a second answer is refused.
        let (answered, safe) = try await walk.api.call("POST", "/v1/checkin-requests/\(id)/answer", ["status": "safe"], token: walk.ben.token)
        #expect(answered == 200 && safe["status"] as? String == "safe" && safe["answered_at"] is String, "\(safe)")
        #expect(try await walk.pushes(to: "cy-phone").map(\.template) == ["checkin_request_answered"])
        let told = try #require(await cyStream.receiveJSON())
        #expect(told["event"] as? String == "checkin_request.answered" && (told["data"] as? [String: Any])?["status"] as? String == "safe")
        #expect(try await walk.api.call("POST", "/v1/checkin-requests/\(id)/answer", ["status": "need_help"], token: walk.ben.token).0 == 409)

        // Asked again, Ben needs help: a red alert by him in Elm, at his place, pushed to Cy.
        let again = try #require(try await ask(walk, walk.ben, in: walk.elm, as: walk.cy).1["id"] as? String)
        let (helped, help) = try await walk.api.call("POST", "/v1/checkin-requests/\(again)/answer",
                                                     ["status": "need_help", "location": ["lat": 55.61, "lon": 12.61]], token: walk.ben.token)
        #expect(helped == 200 && help["status"] as? String == "need_help", "\(help)")
        let seq = try #require(help["alert_seq"] as? Int)
        let (_, alert) = try await walk.api.call("GET", "/v1/groups/\(walk.elm)/messages/\(seq)", token: walk.cy.token)
        #expect(alert["template"] as? String == "need_help" && (alert["alert"] as? [String: Any])?["severity"] as? String == "red")
        #expect((alert["author"] as? [String: Any])?["id"] as? String == walk.ben.id && (alert["location"] as? [String: Any])?["lat"] as? Double == 55.61)
        // (The alert and the answer are queued in one transaction: their order among themselves is not kept.)
        #expect(try await walk.pushes(to: "cy-phone").map(\.template).sorted() == ["alert", "checkin_request_answered", "checkin_request_answered"])
        await walk.api.stop()
    }

    @Test func anUnansweredRequestExpiresAndSharesThePlaceOnlyWhenTheAddresseeAllowsIt() async throws {
        let walk = try await Walk()
        let (_, request) = try await ask(walk, walk.ben, in: walk.elm, as: walk.cy, ["expires_in_s": 60])
        let id = try #require(request["id"] as? String)
        let expires = try CheckinPhaseTests.date(request["expires_at"])
        #expect(try await expire(walk, at: expires - 1).isEmpty)
        #expect(try await expire(walk, at: expires + 1) == [UUID(uuidString: id)!])
        #expect(try await expire(walk, at: expires + 2).isEmpty, "once")
        let pushed = try await walk.pushes(to: "cy-phone")
        #expect(pushed.map(\.template) == ["checkin_request_expired"])
        let expired = try #require(pushed.first?.data["checkin_request"] as? [String: Any])
        #expect(expired["status"] as? String == "expired" && expired["location"] is NSNull, "Ben has not allowed it: \(expired)")
        #expect(try await walk.api.call("POST", "/v1/checkin-requests/\(id)/answer", ["status": "safe"], token: walk.ben.token).0 == 409)

        // Ben allows it, and walks with a check-in: the next unanswered request shares his place.
        #expect(try await walk.api.call("GET", "/v1/me/notifications", token: walk.ben.token).1["share_location_on_unanswered_request"] as? Bool == false)
        let (put, preferences) = try await walk.api.call("PUT", "/v1/me/notifications", ["share_location_on_unanswered_request": true], token: walk.ben.token)
        #expect(put == 200 && preferences["share_location_on_unanswered_request"] as? Bool == true)
        _ = try await walk.start(["group_id": walk.elm, "due_in_s": 3600, "location": ["lat": 55.7, "lon": 12.5]])
        let next = try #require(try await ask(walk, walk.ben, in: walk.elm, as: walk.cy, ["expires_in_s": 60]).1["id"] as? String)
        #expect(try await expire(walk, at: Date() + 120) == [UUID(uuidString: next)!])
        let shared = try await walk.api.call("GET", "/v1/checkin-requests?role=sent", token: walk.cy.token).1["items"] as? [[String: Any]]
        let place = try #require(shared?.first { $0["id"] as? String == next })
        #expect((place["location"] as? [String: Any])?["lat"] as? Double == 55.7 && place["location_at"] is String, "\(place)")
        await walk.api.stop()
    }

    @Test func strangersAndBadInputAre404Or400AndAskingIsThrottled() async throws {
        let walk = try await Walk()
        let other = try APIFixture()
        let eve = try await other.person(email: "eve@example.org")
        let eveGroup = try #require(try await other.call("POST", "/v1/groups", ["name": "Elsewhere"], token: eve.token).1["id"] as? String)
        // Dee is not in Elm; Eve is another tenant's; Oak is not Cy's group; nobody at all.
        #expect(try await ask(walk, walk.dee, in: walk.elm, as: walk.cy).0 == 404)
        #expect(try await ask(walk, eve, in: walk.elm, as: walk.cy).0 == 404)
        #expect(try await ask(walk, walk.ben, in: walk.oak, as: walk.cy).0 == 404)
        #expect(try await ask(walk, walk.ben, in: eveGroup, as: walk.cy).0 == 404)
        #expect(try await walk.api.call("POST", "/v1/checkin-requests", ["user_id": UUID().uuidString, "group_id": walk.elm], token: walk.cy.token).0 == 404)
        for (extra, field) in [(["expires_in_s": 59], "expires_in_s"), (["expires_in_s": 3601], "expires_in_s"),
                               (["note": String(repeating: "x", count: 501)], "note"), (["extra": true], "extra"),
                               (["user_id": "not-a-uuid"], "user_id")] as [([String: Any], String)] {
            let (status, error) = try await ask(walk, walk.ben, in: walk.elm, as: walk.cy, extra)
            #expect(status == 400 && (error["error"] as? [String: Any])?["field"] as? String == field, "\(extra) → \(status) \(error)")
        }
        #expect(try await ask(walk, walk.cy, in: walk.elm, as: walk.cy).0 == 400, "asking yourself")
        #expect(try await walk.api.call("GET", "/v1/checkin-requests?role=everyone", token: walk.cy.token).0 == 400)

        let id = try #require(try await ask(walk, walk.ben, in: walk.elm, as: walk.cy).1["id"] as? String)
        // Only Ben answers: Cy, Ann and Eve get 404; a bad answer is 400.
        for (caller, api) in [(walk.cy, walk.api), (walk.ann, walk.api), (eve, other)] {
            #expect(try await api.call("POST", "/v1/checkin-requests/\(id)/answer", ["status": "safe"], token: caller.token).0 == 404)
        }
        for (body, field) in [(["status": "maybe"], "status"), (["status": "need_help", "location": ["lat": 91, "lon": 0]], "location.lat"),
                              (["status": "safe", "pin": "1234"], "pin")] as [([String: Any], String)] {
            let (status, error) = try await walk.api.call("POST", "/v1/checkin-requests/\(id)/answer", body, token: walk.ben.token)
            #expect(status == 400 && (error["error"] as? [String: Any])?["field"] as? String == field, "\(body) → \(status) \(error)")
        }
        #expect(try await walk.api.call("PUT", "/v1/me/notifications", ["share_location_on_unanswered_request": "yes"], token: walk.ben.token).0 == 400)

        // Ben is asked at most five times an hour, whoever asks.
        #expect(try await walk.api.call("POST", "/v1/checkin-requests/\(id)/answer", ["status": "safe"], token: walk.ben.token).0 == 200)
        for asker in [walk.ann, walk.cy, walk.ann, walk.cy] {
            let again = try #require(try await ask(walk, walk.ben, in: walk.elm, as: asker).1["id"] as? String)
            #expect(try await walk.api.call("POST", "/v1/checkin-requests/\(again)/answer", ["status": "safe"], token: walk.ben.token).0 == 200)
        }
        let (limited, error) = try await ask(walk, walk.ben, in: walk.elm, as: walk.ann)
        #expect(limited == 429 && (error["error"] as? [String: Any])?["code"] as? String == "rate_limited", "\(error)")
        #expect(try await walk.pushes(to: "ben-phone").filter { $0.template == "checkin_request" }.count == 5)
        await other.stop()
        await walk.api.stop()
    }
}
