import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// Emergency contacts over the real API and database: one confirmation message and nothing else
/// before confirming; a missed check-in tells the confirmed ones with a status page link each;
/// the all clear follows the completion; the page shows only its own check-in and 404s once
/// expired or forged.
@Suite(.serialized, .enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct EmergencyContactTests {
    typealias Walk = CheckinPhaseTests.Walk

    /// Messages queued to an address: (template, data).
    func messages(_ walk: Walk, to address: String) async throws -> [(template: String, data: [String: Any])] {
        let rows = try await walk.api.inTenant { _, connection in
            try connection.query("SELECT template, data::text AS data FROM outbox WHERE recipient = \(address) ORDER BY created_at, id").rows.map {
                (try $0.decode(String.self, "template"), try $0.decode(String.self, "data"))
            }
        }
        return try rows.map { ($0.0, try JSONSerialization.jsonObject(with: Data($0.1.utf8)) as? [String: Any] ?? [:]) }
    }

    func addContact(_ walk: Walk, _ body: [String: Any]) async throws -> String {
        let (status, contact) = try await walk.api.call("POST", "/v1/me/emergency-contacts", body, token: walk.ben.token)
        #expect(status == 201 && contact["confirmed"] as? Bool == false, "\(contact)")
        return try #require(contact["id"] as? String)
    }

    @Test func onlyConfirmedContactsAreToldEachWithTheirOwnPageAndTheAllClearFollows() async throws {
        let walk = try await Walk()
        let mum = try await addContact(walk, ["name": "Mum", "email": "mum@example.org"])
        let stranger = try await addContact(walk, ["name": "Not yet", "phone": "+4520000001"])
        // Exactly one message each: the link to confirm.
        let invite = try await messages(walk, to: "mum@example.org")
        #expect(invite.map(\.template) == ["emergency_contact_confirm"] && invite.first?.data["added_by"] as? String == "ben")
        #expect(try await messages(walk, to: "+4520000001").map(\.template) == ["emergency_contact_confirm"])
        let token = try #require(invite.first?.data["token"] as? String)
        #expect(try await walk.api.call("POST", "/v1/emergency-contacts/confirm", ["token": token]).0 == 200)
        #expect(try await walk.api.call("POST", "/v1/emergency-contacts/confirm", ["token": token]).0 == 410)
        #expect(try await walk.api.call("POST", "/v1/emergency-contacts/confirm", ["token": "rem_nonsense"]).0 == 404)
        let listed = try #require(try await walk.api.call("GET", "/v1/me/emergency-contacts", token: walk.ben.token).1["items"] as? [[String: Any]])
        #expect(listed.map { $0["confirmed"] as? Bool } == [true, false])
        #expect((try await walk.api.call("GET", "/v1/me/emergency-contacts", token: walk.cy.token).1["items"] as? [Any])?.isEmpty == true)

        // A missed check-in both watch: only the confirmed one hears, with a link to the page.
        let checkin = try await walk.start(["group_id": walk.elm, "contact_ids": [mum, stranger], "due_in_s": 600, "grace_s": 0,
                                            "location": ["lat": 55.68, "lon": 12.57], "battery": 41])
        let id = try #require(checkin["id"] as? String)
        #expect(Set(checkin["contact_ids"] as? [String] ?? []) == [mum, stranger])
        _ = try await walk.round(at: try CheckinPhaseTests.date(checkin["due_at"]) + 1)
        #expect(try await messages(walk, to: "+4520000001").map(\.template) == ["emergency_contact_confirm"], "nothing before confirming")
        let told = try await messages(walk, to: "mum@example.org")
        #expect(told.map(\.template) == ["emergency_contact_confirm", "checkin_alert"])
        let alert = try #require(told.last?.data)
        #expect(alert["walker"] as? String == "ben" && alert["reason"] as? String == "missed" && alert["contact_name"] as? String == "Mum")
        let status = try #require(alert["status_token"] as? String)
        var (code, page) = try await walk.api.call("GET", "/v1/public/checkins/\(status)")
        #expect(code == 200 && page["name"] as? String == "ben" && page["status"] as? String == "missed" && page["alert_status"] as? String == "open")
        #expect((page["last_location"] as? [String: Any])?["lat"] as? Double == 55.68 && page["battery"] as? Int == 41)
        #expect((page["map_url"] as? String)?.hasPrefix("https://www.openstreetmap.org/?mlat=55.68&mlon=12.57") == true)
        // Live while it lasts: a new point shows.
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/location", ["lat": 55.69, "lon": 12.58, "battery": 40], token: walk.ben.token).0 == 204)
        (code, page) = try await walk.api.call("GET", "/v1/public/checkins/\(status)")
        #expect((page["last_location"] as? [String: Any])?["lat"] as? Double == 55.69 && page["battery"] as? Int == 40)

        // Forged, malformed or another tenant's tokens find nothing.
        let forged = TenantToken.generate(TenantToken.checkinStatus, tenant: try await walk.api.inTenant { tenant, _ in tenant }).text
        let elsewhere = TenantToken.generate(TenantToken.checkinStatus, tenant: UUID()).text
        for bad in [forged, elsewhere, "rcs_short", String(status.dropLast()) + (status.hasSuffix("A") ? "B" : "A"), "'%20OR%201=1--"] {
            #expect(try await walk.api.call("GET", "/v1/public/checkins/\(bad)").0 == 404, "\(bad)")
        }

        // A second check-in watched by Mum: its own page, never the first's.
        let second = try await walk.start(["group_id": walk.oak, "contact_ids": [mum], "due_in_s": 600, "grace_s": 0,
                                           "location": ["lat": 10.5, "lon": 20.5]])
        _ = try await walk.round(at: try CheckinPhaseTests.date(second["due_at"]) + 1)
        let secondStatus = try #require(try await messages(walk, to: "mum@example.org").last?.data["status_token"] as? String)
        #expect(secondStatus != status)
        #expect(((try await walk.api.call("GET", "/v1/public/checkins/\(secondStatus)").1)["last_location"] as? [String: Any])?["lat"] as? Double == 10.5)

        // Ben checks in: the all clear to Mum, and her page shows it.
        #expect(try await walk.api.call("POST", "/v1/checkins/\(id)/complete", token: walk.ben.token).0 == 200)
        let after = try await messages(walk, to: "mum@example.org")
        #expect(after.map(\.template) == ["emergency_contact_confirm", "checkin_alert", "checkin_alert", "checkin_all_clear"])
        (code, page) = try await walk.api.call("GET", "/v1/public/checkins/\(status)")
        #expect(code == 200 && page["status"] as? String == "completed" && page["alert_status"] as? String == "closed")
        // A day after the end, the page is gone.
        try await walk.api.inTenant { _, connection in
            try connection.query("UPDATE checkins SET ended_at = now() - interval '25 hours' WHERE id = \(UUID(uuidString: id)!)")
        }
        #expect(try await walk.api.call("GET", "/v1/public/checkins/\(status)").0 == 404)
        #expect(try await walk.api.call("GET", "/v1/public/checkins/\(secondStatus)").0 == 200)
        await walk.api.stop()
    }

    @Test func contactsAreTheWalkersOwnAndBounded() async throws {
        let walk = try await Walk()
        let mine = try await addContact(walk, ["name": "Dad", "email": "dad@example.org"])
        let (cyStatus, cys) = try await walk.api.call("POST", "/v1/me/emergency-contacts", ["name": "Cy's", "email": "x@example.org"], token: walk.cy.token)
        #expect(cyStatus == 201)
        let theirs = try #require(cys["id"] as? String)
        for ids in [[theirs], [mine, UUID().uuidString]] {
            #expect(try await walk.api.call("POST", "/v1/checkins", ["group_id": walk.elm, "contact_ids": ids, "due_in_s": 600],
                                            token: walk.ben.token).0 == 404)
        }
        let six = (0..<6).map { _ in UUID().uuidString }
        let (sixStatus, sixBody) = try await walk.api.call("POST", "/v1/checkins", ["group_id": walk.elm, "contact_ids": six, "due_in_s": 600],
                                                           token: walk.ben.token)
        #expect(sixStatus == 400 && (sixBody["error"] as? [String: Any])?["field"] as? String == "contact_ids")
        for (body, field) in [(["name": "A", "email": "a@example.org", "phone": "+4520000002"], "email"), (["name": "", "email": "b@example.org"], "name"),
                              (["name": "C", "phone": "12"], "phone"), (["name": "D"], "email")] as [([String: Any], String)] {
            let (status, answer) = try await walk.api.call("POST", "/v1/me/emergency-contacts", body, token: walk.ben.token)
            #expect(status == 400 && (answer["error"] as? [String: Any])?["field"] as? String == field, "\(body) → \(answer)")
        }
        #expect(try await walk.api.call("POST", "/v1/me/emergency-contacts", ["name": "Dad again", "email": "dad@example.org"],
                                        token: walk.ben.token).0 == 409)
        for index in 0..<4 { _ = try await addContact(walk, ["name": "N\(index)", "email": "n\(index)@example.org"]) }
        #expect(try await walk.api.call("POST", "/v1/me/emergency-contacts", ["name": "Sixth", "email": "six@example.org"], token: walk.ben.token).0 == 409)
        #expect(try await walk.api.call("DELETE", "/v1/me/emergency-contacts/\(theirs)", token: walk.ben.token).0 == 404)
        #expect(try await walk.api.call("DELETE", "/v1/me/emergency-contacts/\(mine)", token: walk.ben.token).0 == 204)
        await walk.api.stop()
    }
}
