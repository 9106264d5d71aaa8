import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// `EscalationPolicy` on given times: no clock, no waiting.
struct EscalationPolicyTests {
    let since = Date(timeIntervalSince1970: 1_800_000_000)

    func alert(level: Int = 0, open: Bool = true, red: Bool = true, after: Int? = 300, coming: Bool = false) -> EscalatingAlert {
        EscalatingAlert(open: open, red: red, level: level, escalateAfterSeconds: after, someoneIsComing: coming)
    }

    @Test func eachLevelIsDueItsMultipleOfTheSettingAfterTheAlertOpened() {
        #expect(EscalationPolicy.decide(alert(), since: since, now: since + 299.9) == .wait(until: since + 300))
        #expect(EscalationPolicy.decide(alert(), since: since, now: since + 300) == .escalate(from: 0, to: 1, next: since + 600))
        #expect(EscalationPolicy.decide(alert(level: 1), since: since, now: since + 300) == .wait(until: since + 600))
        #expect(EscalationPolicy.decide(alert(level: 1), since: since, now: since + 600) == .escalate(from: 1, to: 2, next: since + 900))
        #expect(EscalationPolicy.decide(alert(level: 2), since: since, now: since + 901) == .escalate(from: 2, to: 3, next: nil))
        #expect(EscalationPolicy.decide(alert(level: 3), since: since, now: since + 5000) == .stop, "at most three levels")
    }

    @Test func nodesThatWereDownCatchUpInOneStepNotThree() {
        #expect(EscalationPolicy.decide(alert(), since: since, now: since + 3600) == .escalate(from: 0, to: 3, next: nil))
        #expect(EscalationPolicy.decide(alert(), since: since, now: since + 650) == .escalate(from: 0, to: 2, next: since + 900))
        #expect(EscalationPolicy.reaches(from: 0, to: 2) == (members: true, contacts: true))
        #expect(EscalationPolicy.reaches(from: 0, to: 1) == (members: true, contacts: false))
        #expect(EscalationPolicy.reaches(from: 1, to: 2) == (members: false, contacts: true))
        #expect(EscalationPolicy.reaches(from: 2, to: 3) == (members: true, contacts: true))
    }

    @Test func anAnswerAClosePlainSeverityOrEscalationOffStopsIt() {
        let late = since + 10_000
        #expect(EscalationPolicy.decide(alert(coming: true), since: since, now: late) == .stop)
        #expect(EscalationPolicy.decide(alert(open: false), since: since, now: late) == .stop)
        #expect(EscalationPolicy.decide(alert(red: false), since: since, now: late) == .stop)
        #expect(EscalationPolicy.decide(alert(after: nil), since: since, now: late) == .stop)
        // The group's setting grew after the alert opened: the level waits for the new time.
        #expect(EscalationPolicy.decide(alert(after: 3600), since: since, now: since + 300) == .wait(until: since + 3600))
    }
}

/// Escalation over the real database and API: the group setting, escalation contacts and their
/// confirmation, each level once with schedulers racing and across a restart, and the stop at
/// an `on_my_way` answer. The schedulers are driven at chosen times (`runOnce(now:tenant:)`),
/// each round over the street's own tenant: a chosen time minutes ahead would otherwise fire
/// other tests' escalations (the two-node end-to-end test's among them).
@Suite(.serialized, .enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct EscalationTests {
    typealias Street = IncidentTests.Street

    func escalations(_ street: Street) -> AlertEscalations {
        AlertEscalations(pool: street.api.pool, runner: JobRunner(metrics: JobMetrics(), log: Log(level: .error)))
    }

    /// A scheduler round at `now` (a new scheduler: a node just started) over the street's
    /// tenant, and the levels its group's alerts reached in it.
    func run(_ street: Street, at now: Date, scheduler: AlertEscalations? = nil) async throws -> [Int] {
        let group = try #require(UUID(uuidString: street.group))
        return try await (scheduler ?? escalations(street)).runOnce(now: now, tenant: tenant(street)).filter { $0.group == group }.map(\.level)
    }

    func tenant(_ street: Street) async throws -> UUID {
        try await street.api.inTenant { tenant, _ in tenant }
    }

    /// When the alert's escalation counts from (the database's clock).
    func since(_ street: Street, _ seq: Int) async throws -> Date? {
        let group = try #require(UUID(uuidString: street.group))
        return try await street.api.inTenant { _, connection in
            try connection.query("SELECT since FROM alert_escalations WHERE group_id = \(group) AND seq = \(Int64(seq))").first?.decode(Date.self, "since")
        }
    }

    /// Deliveries queued so far other than pushes: (channel, recipient, template, data).
    func messages(_ street: Street) async throws -> [(channel: String, to: String, template: String, data: [String: Any])] {
        try await street.api.inTenant { _, connection in
            try connection.query("SELECT channel, recipient, template, data::text AS data FROM outbox WHERE channel <> 'push' ORDER BY created_at, id").rows.map {
                (try $0.decode(String.self, "channel"), try $0.decode(String.self, "recipient"), try $0.decode(String.self, "template"),
                 try $0.decode(String.self, "data"))
            }
        }.map { ($0.0, $0.1, $0.2, (try? JSONSerialization.jsonObject(with: Data($0.3.utf8)) as? [String: Any]) ?? [:]) }
    }

    @Test func theGroupSettingIsCheckedAndShown() async throws {
        let street = try await Street()
        let path = "/v1/groups/\(street.group)"
        var (status, group) = try await street.api.call("GET", path, token: street.ben.token)
        #expect(status == 200 && group["escalate_after_s"] as? Int == 300 && group["nearby_m"] as? Int == 500)
        for (body, field) in [(["escalate_after_s": 59], "escalate_after_s"), (["escalate_after_s": 3601], "escalate_after_s"),
                              (["escalate_after_s": "300"], "escalate_after_s"), (["nearby_m": 10], "nearby_m"), (["nearby_m": 60_000], "nearby_m")] as [([String: Any], String)] {
            let (status, answer) = try await street.api.call("PATCH", path, body, token: street.owner.token)
            #expect(status == 400 && (answer["error"] as? [String: Any])?["field"] as? String == field, "\(body): \(answer)")
        }
        #expect(try await street.api.call("PATCH", path, ["escalate_after_s": 120], token: street.ben.token).0 == 403)
        (status, group) = try await street.api.call("PATCH", path, ["escalate_after_s": NSNull(), "nearby_m": 800], token: street.owner.token)
        #expect(status == 200 && group["escalate_after_s"] is NSNull && group["nearby_m"] as? Int == 800)
        (status, group) = try await street.api.call("PATCH", path, ["name": "Elm St"], token: street.owner.token)
        #expect(group["escalate_after_s"] is NSNull, "a change that leaves it out leaves it off")
        // With escalation off, a red alert schedules nothing.
        let seq = try await street.post("Fire", kind: "alert", severity: "red", as: street.cy)
        #expect(try await since(street, seq) == nil)
        await street.api.stop()
    }

    @Test func contactsHearNothingBeforeConfirmingAndTheirLinkWorksOnce() async throws {
        let street = try await Street()
        let contacts = "/v1/groups/\(street.group)/escalation-contacts"
        var (status, contact) = try await street.api.call("POST", contacts, ["name": "Aunt May", "email": "May@Example.org"], token: street.owner.token)
        #expect(status == 201 && contact["email"] as? String == "may@example.org" && contact["confirmed"] as? Bool == false)
        #expect(contact["token"] == nil, "the link's token leaves only through the outbox")
        let may = try #require(contact["id"] as? String)
        (status, contact) = try await street.api.call("POST", contacts, ["name": "Night porter", "phone": "+44 20 7946 0000"], token: street.owner.token)
        #expect(status == 201 && contact["phone"] as? String == "+442079460000")
        // Managers only; one address; no address twice.
        #expect(try await street.api.call("POST", contacts, ["name": "X", "email": "x@example.org"], token: street.ben.token).0 == 403)
        #expect(try await street.api.call("GET", contacts, token: street.ben.token).0 == 403)
        #expect(try await street.api.call("POST", contacts, ["name": "X", "email": "x@example.org", "phone": "+4520202020"], token: street.owner.token).0 == 400)
        #expect(try await street.api.call("POST", contacts, ["name": "X"], token: street.owner.token).0 == 400)
        #expect(try await street.api.call("POST", contacts, ["name": "", "email": "x@example.org"], token: street.owner.token).0 == 400)
        #expect(try await street.api.call("POST", contacts, ["name": "May again", "email": "may@example.org"], token: street.owner.token).0 == 409)

        var sent = try await messages(street)
        #expect(sent.map(\.template) == ["escalation_contact_confirm", "escalation_contact_confirm"])
        #expect(sent.map(\.to) == ["may@example.org", "+442079460000"] && sent.map(\.channel) == ["email", "sms"])
        let token = try #require(sent[0].data["token"] as? String)
        #expect(token.hasPrefix("rec_"))

        // A forged token, another kind of token, a token with another tenant's part: 404. The real one: once.
        let confirm = "/v1/escalation-contacts/confirm"
        #expect(try await street.api.call("POST", confirm, ["token": "rec_" + String(repeating: "A", count: 64)]).0 == 404)
        #expect(try await street.api.call("POST", confirm, ["token": street.ben.token]).0 == 404)
        #expect(try await street.api.call("POST", confirm, ["token": "'; DROP TABLE escalation_contacts; --"]).0 == 404)
        (status, contact) = try await street.api.call("POST", confirm, ["token": token])
        #expect(status == 200 && contact["id"] as? String == may && contact["confirmed"] as? Bool == true)
        let again = try await street.api.call("POST", confirm, ["token": token])
        #expect(again.0 == 410 && (again.1["error"] as? [String: Any])?["code"] as? String == "expired")

        // Pages, oldest first.
        var (_, page) = try await street.api.call("GET", contacts + "?limit=1", token: street.owner.token)
        var items = try #require(page["items"] as? [[String: Any]])
        #expect(items.map { $0["name"] as? String } == ["Aunt May"])
        let next = try #require(page["next"] as? String)
        (_, page) = try await street.api.call("GET", contacts + "?limit=1&cursor=\(next)", token: street.owner.token)
        items = try #require(page["items"] as? [[String: Any]])
        #expect(items.map { $0["name"] as? String } == ["Night porter"])
        #expect(try await street.api.call("GET", contacts + "?cursor=nope", token: street.owner.token).0 == 400)

        // Level 2 reaches May (confirmed) and not the porter (never confirmed).
        #expect(try await street.api.call("PATCH", "/v1/groups/\(street.group)", ["escalate_after_s": 60], token: street.owner.token).0 == 200)
        let seq = try await street.post("Break-in at no. 7", kind: "alert", severity: "red", as: street.cy)
        let start = try #require(try await since(street, seq))
        #expect(try await run(street, at: start + 125) == [2])
        sent = try await messages(street)
        let escalations = sent.filter { $0.template == "alert_escalated" }
        #expect(escalations.map(\.to) == ["may@example.org"])
        #expect(escalations.first?.data["level"] as? Int == 2 && (escalations.first?.data["alert"] as? [String: Any])?["seq"] as? Int == seq)

        // A removed contact hears nothing more; a stranger cannot remove one.
        let stranger = try await street.api.person(email: "dee@example.org")
        #expect(try await street.api.call("DELETE", contacts + "/\(may)", token: stranger.token).0 == 404)
        #expect(try await street.api.call("DELETE", contacts + "/\(may)", token: street.owner.token).0 == 204)
        #expect(try await street.api.call("DELETE", contacts + "/\(may)", token: street.owner.token).0 == 404)
        await street.api.stop()
    }

    /// An official warning (a feed's red alert) escalates as the group's red alerts do, to its
    /// members, and never to the group's outside contacts: a flood warning is no emergency in
    /// one neighbour's house.
    @Test func anOfficialWarningEscalatesToMembersButNeverToOutsideContacts() async throws {
        let street = try await Street()
        let contacts = "/v1/groups/\(street.group)/escalation-contacts"
        #expect(try await street.api.call("POST", contacts, ["name": "Aunt May", "email": "may@example.org"], token: street.owner.token).0 == 201)
        let token = try #require(try await messages(street).first?.data["token"] as? String)
        #expect(try await street.api.call("POST", "/v1/escalation-contacts/confirm", ["token": token]).0 == 200)
        #expect(try await street.api.call("PATCH", "/v1/groups/\(street.group)", ["escalate_after_s": 60], token: street.owner.token).0 == 200)
        let group = try #require(UUID(uuidString: street.group))
        let feed = try await street.api.pool.withConnection { connection in
            try FeedStore().add(url: "https://warnings.example/\(UUID().uuidString)", name: "Civil protection", tenants: nil, pollSeconds: 300,
                                sender: nil, on: connection)
        }
        let warning = try CAPAlert.read(Array("""
            <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>surge-\(UUID().uuidString)</identifier><sender>civil</sender>
            <sent>2026-11-28T04:00:00-00:00</sent><status>Actual</status><msgType>Alert</msgType><scope>Public</scope>
            <info><event>Storm surge</event><urgency>Immediate</urgency><severity>Extreme</severity><certainty>Likely</certainty>
            <headline>Storm surge</headline><area><areaDesc>Coast</areaDesc><circle>55.676,12.568 5</circle></area></info></alert>
            """.utf8))
        let tenant = try await tenant(street)
        try await street.api.inTenant { _, connection in
            var tally = FeedWarnings.Tally()
            let area = #"{"circle":{"lat":55.676,"lon":12.568,"radius_m":500}}"#
            try FeedWarnings(feed: feed, now: Date()).apply(warning, tenant: tenant, groups: FeedWarnings.placed([FeedGroup(id: group, areaJSON: area, minSeverity: "amber", drill: false)]),
                                                           tally: &tally, on: connection)
            #expect(tally.raised == 1)
        }
        let seq = try #require(try await street.api.call("GET", "/v1/groups/\(street.group)/alerts", token: street.ben.token).1["items"]
            .flatMap { ($0 as? [[String: Any]])?.first?["seq"] as? Int })
        let start = try #require(try await since(street, seq), "a red warning escalates as the group's red alerts do")
        #expect(try await run(street, at: start + 125) == [2])
        #expect(try await messages(street).filter { $0.template == "alert_escalated" }.isEmpty, "nothing to Aunt May")
        #expect(try await run(street, at: start + 185) == [3])
        #expect(try await messages(street).filter { $0.template == "alert_escalated" }.isEmpty)
        try await street.api.pool.withConnection { _ = try FeedStore().remove(feed.id, on: $0) }
        await street.api.stop()
    }

    @Test func eachLevelFiresOnceWithSchedulersRacingAndAfterARestartAndAnAnswerStopsIt() async throws {
        let street = try await Street()
        let group = "/v1/groups/\(street.group)"
        #expect(try await street.api.call("PATCH", group, ["escalate_after_s": 60], token: street.owner.token).0 == 200)
        let seq = try await street.post("Someone in the garden", kind: "alert", severity: "red", as: street.owner)
        let amber = try await street.post("Gate open", kind: "alert", severity: "amber", as: street.owner)
        #expect(try await since(street, amber) == nil, "only red alerts escalate")
        let start = try #require(try await since(street, seq))

        #expect(try await run(street, at: start + 59).isEmpty)
        // Two nodes' schedulers race for level 1: it fires once.
        let racers = (0..<2).map { _ in escalations(street) }
        let (one, two) = (racers[0], racers[1])
        let tenant = try await tenant(street)
        async let first = one.runOnce(now: start + 61, tenant: tenant)
        async let second = two.runOnce(now: start + 61, tenant: tenant)
        let groupID = try #require(UUID(uuidString: street.group))
        let both = try await first + second
        #expect(both.filter { $0.group == groupID }.map(\.level) == [1])
        #expect(try await run(street, at: start + 62).isEmpty, "level 1 does not fire twice")

        // Level 1: the critical push again to those pushed who have not answered (Ben).
        let pushes = try await IncidentTests().pushes(street).filter { $0.data["escalation_level"] != nil }
        #expect(pushes.map(\.to) == ["ben-phone"] && pushes.allSatisfy { $0.data["critical"] as? Bool == true })
        var (_, detail) = try await street.api.call("GET", "\(group)/messages/\(seq)", token: street.cy.token)
        #expect((detail["alert"] as? [String: Any])?["escalation_level"] as? Int == 1)

        // A restarted node (a new scheduler) picks level 2 up at its time, then level 3, then nothing more.
        #expect(try await run(street, at: start + 121) == [2])
        #expect(try await run(street, at: start + 181) == [3])
        #expect(try await run(street, at: start + 200).isEmpty)
        #expect(try await since(street, seq) == nil, "the job is gone after the last level")
        let events = try await street.api.inTenant { _, connection in
            try connection.query("SELECT data->>'level' AS level FROM group_events WHERE event = 'alert.escalated' ORDER BY seq").rows.map {
                try $0.decode(String.self, "level")
            }
        }
        #expect(events == ["1", "2", "3"])
        // Closed and opened again, it starts over at level 0 (and the answer says so).
        #expect(try await street.api.call("POST", "\(group)/alerts/\(seq)/close", token: street.owner.token).0 == 200)
        let (reopenedStatus, again) = try await street.api.call("POST", "\(group)/alerts/\(seq)/reopen", token: street.owner.token)
        #expect(reopenedStatus == 200 && (again["alert"] as? [String: Any])?["escalation_level"] as? Int == 0)
        #expect(try await since(street, seq) != nil)
        #expect(try await street.api.call("POST", "\(group)/alerts/\(seq)/close", token: street.owner.token).0 == 200)

        // Another red alert: Ben is on his way before the time, so it never escalates; a closed one neither.
        let answered = try await street.post("Smoke", kind: "alert", severity: "red", as: street.cy)
        let closed = try await street.post("Shouting", kind: "alert", severity: "red", as: street.cy)
        let later = try #require(try await since(street, answered))
        #expect(try await street.api.call("POST", "\(group)/alerts/\(answered)/ack", ["response": "on_my_way"], token: street.ben.token).0 == 200)
        #expect(try await street.api.call("POST", "\(group)/alerts/\(closed)/close", token: street.cy.token).0 == 200)
        #expect(try await run(street, at: later + 70).isEmpty)
        #expect(try await since(street, answered) == nil)
        #expect(try await since(street, closed) == nil)
        (_, detail) = try await street.api.call("GET", "\(group)/messages/\(answered)", token: street.cy.token)
        #expect((detail["alert"] as? [String: Any])?["escalation_level"] as? Int == 0)

        // Reopened, it escalates again from the start.
        #expect(try await street.api.call("POST", "\(group)/alerts/\(closed)/reopen", token: street.cy.token).0 == 200)
        let reopened = try #require(try await since(street, closed))
        #expect(try await run(street, at: reopened + 61) == [1])
        await street.api.stop()
    }
}

/// Nearest first: homes on the map, distances in pushes, the critical flag within `nearby_m`,
/// and the nearest members in the alert detail for those who run the response.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct NearbyTests {
    typealias Street = IncidentTests.Street

    @Test func pushesCarryDistancesAndTheNearestGetTheCriticalFlag() async throws {
        let street = try await Street()
        let api = street.api
        // Ben lives about 111 m north of the alert, Cy about 1.1 km; the owner set no location.
        let (status, me) = try await api.call("PATCH", "/v1/me", ["home": ["address": "4 Elm St", "location": ["lat": 55.001, "lon": 12.0]]],
                                               token: street.ben.token)
        #expect(status == 200 && ((me["home"] as? [String: Any])?["location"] as? [String: Any])?["lat"] as? Double == 55.001)
        #expect(try await api.call("PATCH", "/v1/me", ["home": ["location": ["lat": 55.01, "lon": 12.0]]], token: street.cy.token).0 == 200)
        #expect(try await api.call("POST", "/v1/me/devices", ["platform": "fcm", "token": "cy-phone"], token: street.cy.token).0 == 201)
        for (location, field) in [(["lat": 91, "lon": 0], "home.location.lat"), (["lat": 0, "lon": -180.5], "home.location.lon"),
                                  (["lat": "NaN", "lon": 0], "home.location.lat"), (["lat": 1], "home.location.lon")] as [([String: Any], String)] {
            let (status, answer) = try await api.call("PATCH", "/v1/me", ["home": ["location": location]], token: street.cy.token)
            #expect(status == 400 && (answer["error"] as? [String: Any])?["field"] as? String == field, "\(location): \(answer)")
        }

        let (posted, message) = try await api.call("POST", "/v1/groups/\(street.group)/messages",
                                                   ["client_msg_id": "n1", "text": "Break-in", "kind": "alert", "severity": "red",
                                                    "location": ["lat": 55.0, "lon": 12.0]], token: street.owner.token)
        #expect(posted == 201)
        let seq = try #require(message["seq"] as? Int)
        let pushes = Dictionary(uniqueKeysWithValues: try await IncidentTests().pushes(street).map { ($0.to, $0.data) })
        let ben = try #require(pushes["ben-phone"]), cy = try #require(pushes["cy-phone"])
        #expect((ben["distance_m"] as? Double).map { abs($0 - 111) <= 1 } == true && ben["critical"] as? Bool == true)
        #expect((cy["distance_m"] as? Double).map { abs($0 - 1112) <= 2 } == true && cy["critical"] as? Bool == false)

        // The owner sees who lives nearest, each distance only as a band, with their answers; a
        // plain member does not, not even of an alert they raised.
        #expect(try await api.call("POST", "/v1/groups/\(street.group)/alerts/\(seq)/ack", ["response": "on_my_way"], token: street.cy.token).0 == 200)
        let path = "/v1/groups/\(street.group)/messages/\(seq)"
        let nearby = try #require(((try await api.call("GET", path, token: street.owner.token).1)["alert"] as? [String: Any])?["nearby"] as? [[String: Any]])
        #expect(nearby.map { $0["display_name"] as? String } == ["ben", "cy"])
        #expect(nearby.map { $0["distance"] as? String } == ["100-300m", ">1km"] && nearby.allSatisfy { $0["distance_m"] == nil }, "\(nearby)")
        #expect(nearby.map { $0["response"] as? String } == [nil, "on_my_way"] && nearby[0]["response"] is NSNull)
        let asMember = try #require((try await api.call("GET", path, token: street.ben.token).1)["alert"] as? [String: Any])
        #expect(asMember["nearby"] == nil && asMember["receipts"] != nil)
        let (raised, own) = try await api.call("POST", "/v1/groups/\(street.group)/messages",
                                               ["client_msg_id": "n2", "text": "Who lives here?", "kind": "alert", "severity": "info",
                                                "location": ["lat": 55.001, "lon": 12.0]], token: street.cy.token)
        #expect(raised == 201)
        let ownSeq = try #require(own["seq"] as? Int)
        let ownAlert = try #require((try await api.call("GET", "/v1/groups/\(street.group)/messages/\(ownSeq)", token: street.cy.token).1)["alert"]
                                    as? [String: Any])
        #expect(ownAlert["nearby"] == nil, "an author who is a plain member sees no one's distance")
        await api.stop()
    }
}
