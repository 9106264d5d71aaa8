import Foundation
import RoostPersistence
import RoostProtocol
import RoostTestSupport
@testable import RoostServer
import Testing

/// A group's audit (API.md "Accounts") over the real API and database: every kind of manager
/// action appears once, with its actor and target, newest first; members get 403, anyone else
/// 404; the operator's command reads across groups.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct AuditTests {
    @Test func everyManagerActionAppearsOnceWithItsActorAndTarget() async throws {
        let api = try APIFixture()
        let ann = try await api.person(email: "ann@example.org")
        let ben = try await api.person(email: "ben@example.org")
        let cy = try await api.person(email: "cy@example.org")
        func call(_ method: String, _ path: String, _ body: [String: Any]? = nil, as person: APIFixture.Person) async throws -> [String: Any] {
            let (status, answer) = try await api.call(method, path, body, token: person.token)
            #expect((200..<300).contains(status), "\(method) \(path): \(status) \(answer)")
            return answer
        }
        let group = try #require(try await call("POST", "/v1/groups", ["name": "Elm"], as: ann)["id"] as? String)
        try await api.addMember(ben.id, to: group, role: "member")
        try await api.addMember(cy.id, to: group, role: "member")
        let base = "/v1/groups/\(group)"
        _ = try await call("PATCH", base, ["name": "Elm Street", "escalate_after_s": 300], as: ann)
        _ = try await call("PATCH", "\(base)/members/\(ben.id)", ["role": "admin"], as: ann)
        let invitation = try #require(try await call("POST", "\(base)/invitations", ["email": "dee@example.org"], as: ben)["id"] as? String)
        _ = try await call("DELETE", "\(base)/invitations/\(invitation)", as: ben)
        let bridge = try #require((try await call("POST", "\(base)/bridges", ["name": "Panel"], as: ann)["bridge"] as? [String: Any])?["id"] as? String)
        _ = try await call("DELETE", "\(base)/bridges/\(bridge)", as: ann)
        let alert = try #require(try await call("POST", "\(base)/messages", ["client_msg_id": "a", "kind": "alert", "text": "Smoke"], as: cy)["seq"] as? Int)
        _ = try await call("POST", "\(base)/alerts/\(alert)/close", ["resolution": "a bonfire"], as: ben)
        _ = try await call("POST", "\(base)/alerts/\(alert)/reopen", as: ann)
        _ = try await call("PUT", "\(base)/templates", ["templates": [["key": "fire", "text": "Fire!", "kind": "alert", "severity": "red"]]], as: ann)
        let contact = try #require(try await call("POST", "\(base)/escalation-contacts", ["name": "Warden", "phone": "+4520000002"], as: ann)["id"] as? String)
        _ = try await call("DELETE", "\(base)/escalation-contacts/\(contact)", as: ann)
        _ = try await call("DELETE", "\(base)/members/\(cy.id)", as: ben)
        // Things that are not a manager's change leave no record: Cy's own alert, a member leaving.
        try await api.addMember(cy.id, to: group, role: "member")
        _ = try await call("DELETE", "\(base)/members/\(cy.id)", as: cy)

        let (status, page) = try await api.call("GET", "\(base)/audit?limit=100", token: ben.token)
        let items = try #require(page["items"] as? [[String: Any]], "\(status) \(page)")
        let actions = items.map { $0["action"] as? String ?? "?" }
        #expect(actions == ["member.removed", "escalation_contact.removed", "escalation_contact.added", "templates.replaced", "alert.reopened",
                            "alert.closed", "bridge.revoked", "bridge.created", "invitation.revoked", "invitation.sent", "member.role_changed",
                            "group.updated"], "\(actions)")
        func entry(_ action: String) -> [String: Any] { items.first { $0["action"] as? String == action } ?? [:] }
        func actor(_ action: String) -> String? { (entry(action)["actor"] as? [String: Any])?["id"] as? String }
        func target(_ action: String) -> [String: String]? {
            (entry(action)["target"] as? [String: Any])?.compactMapValues { $0 as? String }
        }
        // Who was affected is named (members, bridges, contacts by name: never an address).
        #expect(actor("member.removed") == ben.id && target("member.removed") == ["type": "user", "id": cy.id, "name": "cy"])
        #expect(actor("member.role_changed") == ann.id && target("member.role_changed") == ["type": "user", "id": ben.id, "name": "ben"])
        #expect(entry("member.role_changed")["data"] as? [String: String] == ["from": "member", "to": "admin"])
        #expect(actor("invitation.sent") == ben.id && target("invitation.sent") == ["type": "invitation", "id": invitation])
        #expect(target("bridge.created") == ["type": "bridge", "id": bridge, "name": "Panel"] && target("escalation_contact.added")?["id"] == contact)
        #expect(actor("alert.closed") == ben.id && target("alert.closed") == ["type": "alert", "id": String(alert)])
        #expect((entry("alert.closed")["data"] as? [String: Any])?["resolution"] as? String == "a bonfire")
        #expect(((entry("group.updated")["actor"] as? [String: Any])?["display_name"] as? String) == "ann")
        // No address of the invited person or the contact is kept in the audit.
        let text = String(decoding: try JSONSerialization.data(withJSONObject: page), as: UTF8.self)
        #expect(!text.contains("dee@example.org") && !text.contains("+4520000002"))

        // Pages follow `next` through `before`; members get 403, other tenants 404.
        let (_, first) = try await api.call("GET", "\(base)/audit?limit=5", token: ann.token)
        let next = try #require(first["next"] as? String)
        let (_, second) = try await api.call("GET", "\(base)/audit?limit=100&before=\(next)", token: ann.token)
        #expect(((first["items"] as? [[String: Any]]) ?? []).count + ((second["items"] as? [[String: Any]]) ?? []).count == items.count)
        #expect(try await api.call("GET", "\(base)/audit?before=garbage", token: ann.token).0 == 400)
        try await api.addMember(cy.id, to: group, role: "member")
        #expect(try await api.call("GET", "\(base)/audit", token: cy.token).0 == 403)
        let other = try APIFixture()
        let eve = try await other.person(email: "eve@example.org")
        #expect(try await other.call("GET", "\(base)/audit", token: eve.token).0 == 404)

        // The operator's view across groups includes a deleted group's record.
        _ = try await call("DELETE", base, as: ann)
        var configuration = ServerConfiguration()
        configuration.databaseURL = TestDatabase.url
        configuration.migrate = false
        let lines = try await RoostCommands.audit(configuration, tenant: api.tenant, since: nil, limit: 100)
        let newest = try #require(lines.first)
        let first2 = try #require(try JSONSerialization.jsonObject(with: Data(newest.utf8)) as? [String: Any])
        #expect(first2["action"] as? String == "group.deleted" && first2["group_id"] as? String == group)
        #expect(lines.count == items.count + 1)
        await other.stop()
        await api.stop()
    }
}
