import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// API.md "Moderation and tenant administration" over real sockets and the real database:
/// reports and their queue, mutes, blocks, coordinators and the operator's administration of a
/// tenant, each with the 403 and 404 of the wrong caller.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct ModerationTests {
    static let operatorToken = "operator-\(UUID().uuidString)-\(UUID().uuidString)"

    struct Street {
        let api: APIFixture
        let owner: APIFixture.Person, admin: APIFixture.Person, member: APIFixture.Person, troll: APIFixture.Person, outsider: APIFixture.Person
        let group: String
        let trollEmail: String

        init(stream: Bool = false) async throws {
            api = try APIFixture(stream: stream, adminToken: ModerationTests.operatorToken)
            owner = try await api.person(email: "olga@example.org")
            admin = try await api.person(email: "ali@example.org")
            member = try await api.person(email: "mo@example.org")
            trollEmail = "troll@example.org"
            troll = try await api.person(email: trollEmail)
            outsider = try await api.person(email: "ola@example.org")
            group = try #require(try await api.call("POST", "/v1/groups", ["name": "Birch Close"], token: owner.token).1["id"] as? String)
            try await api.addMember(admin.id, to: group, role: "admin")
            try await api.addMember(member.id, to: group, role: "member")
            try await api.addMember(troll.id, to: group, role: "member")
        }

        func post(_ text: String, by person: APIFixture.Person, kind: String = "chat", severity: String? = nil) async throws -> (Int, [String: Any]) {
            var body: [String: Any] = ["client_msg_id": UUID().uuidString, "text": text, "kind": kind]
            if let severity { body["severity"] = severity }
            return try await api.call("POST", "/v1/groups/\(group)/messages", body, token: person.token)
        }

        func audit() async throws -> [String] {
            let (status, body) = try await api.call("GET", "/v1/groups/\(group)/audit", token: owner.token)
            #expect(status == 200)
            return (body["items"] as? [[String: Any]] ?? []).compactMap { $0["action"] as? String }
        }

        func admin(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> (Int, [String: Any]) {
            try await api.call(method, "/v1/admin/tenants/\(api.tenant)\(path)", body, token: ModerationTests.operatorToken)
        }
    }

    @Test func aReportReachesTheManagersAndTheQueueAndClosingItCanRemoveTheMessage() async throws {
        let street = try await Street(stream: true)
        let api = street.api
        // The admin has a phone: the report is pushed to it.
        let adminID = UUID(uuidString: street.admin.id)!
        try await api.inTenant { tenant, connection in
            try connection.query("""
                INSERT INTO devices (tenant_id, user_id, platform, token) VALUES (\(tenant), \(adminID), 'fcm', 'admin-phone')
                """)
        }
        let ownerStream = try await StreamTests().stream(api, street.owner).0
        let (posted, message) = try await street.post("Cheap watches, DM me", by: street.troll)
        #expect(posted == 201)
        let seq = try #require(message["seq"] as? Int)
        _ = try await StreamTests().next(ownerStream)

        let path = "/v1/groups/\(street.group)/messages/\(seq)/report"
        let (status, report) = try await api.call("POST", path, ["reason": " Spam, again "], token: street.member.token)
        #expect(status == 201, "\(report)")
        #expect(report["status"] as? String == "open" && report["reason"] as? String == "Spam, again" && report["seq"] as? Int == seq)
        let id = try #require(report["id"] as? String)
        // The owner hears of it at once; the admin's phone is pushed.
        let notice = try await StreamTests().next(ownerStream, "notice")
        #expect(notice["event"] as? String == "report.created" && (notice["data"] as? [String: Any])?["id"] as? String == id, "\(notice)")
        let pushes = try await api.inTenant { _, connection in
            try connection.query("SELECT recipient FROM outbox WHERE template = 'report_created'").rows.map { try $0.decode(String.self, "recipient") }
        }
        #expect(pushes == ["admin-phone"])

        // One open report per member and message; only what exists and only members.
        #expect(try await api.call("POST", path, ["reason": "still spam"], token: street.member.token).0 == 409)
        #expect(try await api.call("POST", path, ["reason": "spam"], token: street.outsider.token).0 == 404)
        #expect(try await api.call("POST", "/v1/groups/\(street.group)/messages/9999/report", ["reason": "x"], token: street.member.token).0 == 404)
        #expect(try await api.call("POST", path, ["reason": "  "], token: street.member.token).1.errorCode == "validation_failed")
        #expect(try await api.call("POST", path, ["reason": "x", "extra": 1], token: street.member.token).0 == 400)

        // The queue is the managers'.
        let queue = "/v1/groups/\(street.group)/reports"
        #expect(try await api.call("GET", queue, token: street.member.token).0 == 403)
        #expect(try await api.call("GET", queue, token: street.outsider.token).0 == 404)
        #expect(try await api.call("GET", queue + "?status=maybe", token: street.admin.token).0 == 400)
        let (listed, open) = try await api.call("GET", queue, token: street.admin.token)
        let items = try #require(open["items"] as? [[String: Any]])
        #expect(listed == 200 && items.count == 1)
        let shown = try #require(items.first?["message"] as? [String: Any])
        #expect(shown["text"] as? String == "Cheap watches, DM me" && (shown["author"] as? [String: Any])?["id"] as? String == street.troll.id)
        #expect((items.first?["reporter"] as? [String: Any])?["id"] as? String == street.member.id)

        // Closing it as removed removes the message; a second close is a conflict.
        let close = "\(queue)/\(id)/close"
        #expect(try await api.call("POST", close, ["action": "removed"], token: street.member.token).0 == 403)
        #expect(try await api.call("POST", close, ["action": "banned"], token: street.admin.token).0 == 400)
        let (closed, done) = try await api.call("POST", close, ["action": "removed"], token: street.admin.token)
        #expect(closed == 200 && done["status"] as? String == "closed" && done["action"] as? String == "removed", "\(done)")
        #expect((done["message"] as? [String: Any])?["removed"] as? Bool == true)
        #expect(try await api.call("POST", close, ["action": "none"], token: street.admin.token).0 == 409)
        #expect(try await api.call("POST", "\(queue)/\(UUID().uuidString)/close", ["action": "none"], token: street.admin.token).0 == 404)
        let (_, removed) = try await api.call("GET", "/v1/groups/\(street.group)/messages/\(seq)", token: street.member.token)
        #expect(removed["text"] as? String == "", "\(removed)")
        #expect((try await api.call("GET", queue, token: street.admin.token).1["items"] as? [Any])?.isEmpty == true)
        #expect((try await api.call("GET", queue + "?status=closed", token: street.admin.token).1["items"] as? [Any])?.count == 1)
        let actions = try await street.audit()
        #expect(actions.prefix(2) == ["report.closed", "message.redacted"], "\(actions)")
        await api.stop()
    }

    @Test func aReportOfAMessageHiddenFromSomeoneNeverReachesThem() async throws {
        let street = try await Street()
        let api = street.api
        // An alert hidden from the owner (as a duress alert is from its walker), and both managers with a phone.
        let (owner, admin) = (UUID(uuidString: street.owner.id)!, UUID(uuidString: street.admin.id)!)
        let (_, message) = try await street.post("Silent alarm", by: street.member, kind: "alert", severity: "red")
        let seq = try #require(message["seq"] as? Int)
        try await api.inTenant { tenant, connection in
            try connection.query("UPDATE messages SET hidden_from = \(owner) WHERE seq = \(seq)")
            try connection.query("UPDATE group_events SET hidden_from = \(owner) WHERE seq = \(seq)")
            try connection.query("DELETE FROM outbox")
            try connection.query("""
                INSERT INTO devices (tenant_id, user_id, platform, token)
                VALUES (\(tenant), \(owner), 'fcm', 'owner-phone'), (\(tenant), \(admin), 'fcm', 'admin-phone')
                """)
        }
        #expect(try await api.call("POST", "/v1/groups/\(street.group)/messages/\(seq)/report", ["reason": "wrong group"], token: street.owner.token).0 == 404,
                "what is hidden from the owner cannot be reported by them")
        let (status, report) = try await api.call("POST", "/v1/groups/\(street.group)/messages/\(seq)/report", ["reason": "wrong group"],
                                                   token: street.troll.token)
        #expect(status == 201, "\(report)")
        let pushed = try await api.inTenant { _, connection in
            try connection.query("SELECT recipient FROM outbox WHERE template = 'report_created'").rows.map { try $0.decode(String.self, "recipient") }
        }
        #expect(pushed == ["admin-phone"], "\(pushed)")
        let queue = "/v1/groups/\(street.group)/reports"
        #expect((try await api.call("GET", queue, token: street.owner.token).1["items"] as? [Any])?.isEmpty == true)
        #expect((try await api.call("GET", queue, token: street.admin.token).1["items"] as? [Any])?.count == 1)
        let id = try #require(report["id"] as? String)
        #expect(try await api.call("POST", "\(queue)/\(id)/close", ["action": "none"], token: street.owner.token).0 == 404)
        // Closed by the admin: the owner's audit does not show it either.
        #expect(try await api.call("POST", "\(queue)/\(id)/close", ["action": "removed"], token: street.admin.token).0 == 200)
        let (_, audit) = try await api.call("GET", "/v1/groups/\(street.group)/audit", token: street.owner.token)
        let actions = (audit["items"] as? [[String: Any]] ?? []).compactMap { $0["action"] as? String }
        #expect(!actions.contains("report.closed") && !actions.contains("message.redacted"), "\(actions)")
        let (_, adminAudit) = try await api.call("GET", "/v1/groups/\(street.group)/audit", token: street.admin.token)
        #expect((adminAudit["items"] as? [[String: Any]] ?? []).compactMap { $0["action"] as? String }.prefix(2) == ["report.closed", "message.redacted"])
        await api.stop()
    }

    @Test func aMutedMemberIsHeardOnlyByRedAlertsUntilTheMuteEnds() async throws {
        let street = try await Street()
        let api = street.api
        let mute = "/v1/groups/\(street.group)/members/\(street.troll.id)/mute"
        #expect(try await api.call("POST", mute, ["minutes": 60], token: street.member.token).0 == 403)
        #expect(try await api.call("POST", mute, ["minutes": 60], token: street.outsider.token).0 == 404)
        #expect(try await api.call("POST", mute, ["minutes": 0], token: street.admin.token).0 == 400)
        #expect(try await api.call("POST", mute, ["minutes": 43_201], token: street.admin.token).0 == 400)
        #expect(try await api.call("POST", "/v1/groups/\(street.group)/members/\(street.owner.id)/mute", ["minutes": 5], token: street.admin.token).0 == 403)
        #expect(try await api.call("POST", "/v1/groups/\(street.group)/members/\(street.admin.id)/mute", ["minutes": 5], token: street.admin.token).0 == 403)
        #expect(try await api.call("POST", "/v1/groups/\(street.group)/members/\(UUID().uuidString)/mute", ["minutes": 5], token: street.admin.token).0 == 404)

        let (status, muted) = try await api.call("POST", mute, ["minutes": 60], token: street.admin.token)
        #expect(status == 200 && muted["user_id"] as? String == street.troll.id && muted["muted_until"] is String, "\(muted)")
        let (chat, refused) = try await street.post("You can't stop me", by: street.troll)
        #expect(chat == 403 && refused.errorCode == "muted", "\(refused)")
        #expect(try await street.post("Suspicious van", by: street.troll, kind: "alert", severity: "amber").0 == 403)
        #expect(try await street.post("Fire at number 4", by: street.troll, kind: "alert", severity: "red").0 == 201, "red alerts always go through")
        #expect(try await street.post("Hello", by: street.member).0 == 201, "only the muted member is muted")

        // A mute ends by itself, and can be lifted.
        let troll = UUID(uuidString: street.troll.id)!
        try await api.inTenant { _, connection in
            try connection.query("UPDATE memberships SET muted_until = now() - interval '1 second' WHERE user_id = \(troll)")
        }
        #expect(try await street.post("Back again", by: street.troll).0 == 201)
        #expect(try await api.call("POST", mute, ["minutes": 10], token: street.owner.token).0 == 200)
        let (lifted, unmuted) = try await api.call("DELETE", mute, token: street.admin.token)
        #expect(lifted == 200 && unmuted["muted_until"] is NSNull, "\(unmuted)")
        #expect(try await street.post("Sorry everyone", by: street.troll).0 == 201)
        #expect(try await street.audit().prefix(3) == ["member.unmuted", "member.muted", "member.muted"])
        await api.stop()
    }

    @Test func aBlockedMemberIsRemovedAndCannotComeBackByInvitation() async throws {
        let street = try await Street()
        let api = street.api
        let block = "/v1/groups/\(street.group)/members/\(street.troll.id)/block"
        #expect(try await api.call("POST", block, token: street.member.token).0 == 403)
        #expect(try await api.call("POST", block, token: street.outsider.token).0 == 404)
        #expect(try await api.call("POST", "/v1/groups/\(street.group)/members/\(street.owner.id)/block", token: street.admin.token).0 == 403)
        #expect(try await api.call("POST", block, token: street.admin.token).0 == 204)
        #expect(try await api.call("GET", "/v1/groups/\(street.group)", token: street.troll.token).0 == 404)
        #expect(try await api.call("POST", block, token: street.admin.token).0 == 404, "no longer a member")

        let invitations = "/v1/groups/\(street.group)/invitations"
        let (refused, body) = try await api.call("POST", invitations, ["email": street.trollEmail], token: street.owner.token)
        #expect(refused == 403 && (body["error"] as? [String: Any])?["field"] as? String == "email", "\(body)")
        // A new address does not get them back in: accepting is refused for the account.
        #expect(try await api.call("POST", invitations, ["email": "troll-two@example.org"], token: street.owner.token).0 == 201)
        let token = try await api.inTenant { _, connection in
            try connection.query("SELECT data->>'token' AS token FROM outbox WHERE recipient = 'troll-two@example.org'").rows[0].decode(String.self, "token")
        }
        let (accepted, answer) = try await api.call("POST", "/v1/invitations/accept", ["token": token], token: street.troll.token)
        #expect(accepted == 403, "\(answer)")
        #expect(try await api.call("GET", "/v1/groups/\(street.group)", token: street.troll.token).0 == 404)
        // Newest first: the invitation to the new address, then the block (the refused one is not sent).
        #expect(try await street.audit().prefix(2) == ["invitation.sent", "member.blocked"])
        await api.stop()
    }

    @Test func aCoordinatorSeesEveryGroupAndActsAsItsAdminUntilTheOperatorSaysOtherwise() async throws {
        let street = try await Street(stream: true)
        let api = street.api
        let coordinator = street.outsider
        let other = try #require(try await api.call("POST", "/v1/groups", ["name": "Ash Row"], token: street.member.token).1["id"] as? String)
        #expect(try await api.call("GET", "/v1/groups/\(street.group)/reports", token: coordinator.token).0 == 404)

        #expect(try await street.admin("PUT", "/coordinators/\(UUID().uuidString)").0 == 404)
        let (granted, view) = try await street.admin("PUT", "/coordinators/\(coordinator.id)")
        #expect(granted == 200 && view["coordinator"] as? Bool == true, "\(view)")
        let (_, list) = try await api.call("GET", "/v1/groups", token: coordinator.token)
        let seen = (list["items"] as? [[String: Any]] ?? []).map { ($0["id"] as? String ?? "", $0["role"] as? String ?? "") }
        #expect(Set(seen.map(\.0)) == [street.group, other] && seen.allSatisfy { $0.1 == "admin" }, "\(list)")
        #expect(try await api.call("GET", "/v1/groups/\(other)/reports", token: coordinator.token).0 == 200)
        #expect(try await api.call("POST", "/v1/groups/\(street.group)/members/\(street.troll.id)/mute", ["minutes": 5], token: coordinator.token).0 == 200)
        // An admin, not the owner: the owner's rights stay the owner's.
        #expect(try await api.call("DELETE", "/v1/groups/\(other)", token: coordinator.token).0 == 403)
        // Their stream follows every group, and a resume replays one they are not in.
        let (stream, ready) = try await StreamTests().stream(api, coordinator)
        #expect(Set((ready["groups"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }) == [street.group, other], "\(ready)")
        let (_, said) = try await api.call("POST", "/v1/groups/\(other)/messages", ["client_msg_id": "c1", "kind": "chat", "text": "Bins out tonight"],
                                           token: street.member.token)
        let event = try await StreamTests().next(stream)
        #expect(event["group_id"] as? String == other && event["seq"] as? Int == said["seq"] as? Int, "\(event)")
        let replay = try await WebSocketTestClient.connect(port: api.test.port, path: "/v1/stream", token: coordinator.token)
        _ = await replay.receiveJSON()
        replay.sendText(#"{"type":"resume","cursors":{"\#(other)":0}}"#)
        #expect((await replay.receiveJSON())?["seq"] as? Int == 1, "the group's log from its start")

        // Revoked: signed out everywhere (the streams close), and the groups are theirs no more.
        #expect(try await street.admin("DELETE", "/coordinators/\(coordinator.id)").0 == 204)
        #expect(await stream.receiveClose() == .some(.policyViolation))
        #expect(try await api.call("GET", "/v1/groups", token: coordinator.token).0 == 401)
        let again = try await api.call("POST", "/v1/auth/login", ["tenant": api.tenant, "email": "ola@example.org", "password": APIFixture.password]).1
        let token = try #require(again["token"] as? String)
        #expect(try await api.call("GET", "/v1/groups/\(other)/reports", token: token).0 == 404)
        #expect((try await api.call("GET", "/v1/groups", token: token).1["items"] as? [Any])?.isEmpty == true)
        await api.stop()
    }

    @Test func theOperatorSuspendsErasesAndHandsOverInOneTenantOnly() async throws {
        let street = try await Street(stream: true)
        let api = street.api
        #expect(try await api.call("GET", "/v1/admin/tenants/\(api.tenant)/users", token: "wrong-token").0 == 401)
        #expect(try await api.call("GET", "/v1/admin/tenants/no-such-tenant/users", token: Self.operatorToken).0 == 404)
        let (listed, users) = try await street.admin("GET", "/users?limit=200")
        #expect(listed == 200 && (users["items"] as? [[String: Any]])?.count == 5, "\(users)")
        let (shown, troll) = try await street.admin("GET", "/users/\(street.troll.id)")
        #expect(shown == 200 && troll["email"] as? String == street.trollEmail
                && (troll["groups"] as? [[String: Any]])?.first?["group_id"] as? String == street.group, "\(troll)")
        // Another tenant's account is not found under this one.
        let closed = api.closedTenant
        let stranger = try await api.pool.withConnection { connection in
            let tenant = try TenantStore().find(slug: closed, on: connection)!.id
            return try connection.withTenantTransaction(tenant) {
                try UserStore().create(tenant: tenant, email: "elsewhere@example.org", phone: nil, passwordHash: "x", displayName: "Else", on: $0).id
            }
        }
        #expect(try await street.admin("GET", "/users/\(stranger)").0 == 404)

        // Suspended: the stream closes, the token stops working, and signing in is refused until let back.
        let stream = try await StreamTests().stream(api, street.troll).0
        let (suspended, view) = try await street.admin("PATCH", "/users/\(street.troll.id)", ["suspended": true])
        #expect(suspended == 200 && view["suspended"] as? Bool == true)
        #expect(await stream.receiveClose() == .some(.policyViolation))
        #expect(try await api.call("GET", "/v1/me", token: street.troll.token).0 == 401)
        let login: [String: Any] = ["tenant": api.tenant, "email": street.trollEmail, "password": APIFixture.password]
        let (refused, why) = try await api.call("POST", "/v1/auth/login", login)
        #expect(refused == 403 && why.errorCode == "suspended", "\(why)")
        #expect(try await street.admin("PATCH", "/users/\(street.troll.id)", ["suspended": false]).0 == 200)
        #expect(try await api.call("POST", "/v1/auth/login", login).0 == 200)
        #expect(try await street.admin("PATCH", "/users/\(street.troll.id)", ["suspended": "yes"]).0 == 400)

        // Groups: listed with owners, handed over to a member, deleted.
        let (_, groups) = try await street.admin("GET", "/groups")
        let listedGroup = (groups["items"] as? [[String: Any]])?.first { $0["id"] as? String == street.group }
        #expect((listedGroup?["owner"] as? [String: Any])?["id"] as? String == street.owner.id && listedGroup?["members"] as? Int == 4)
        #expect(try await street.admin("POST", "/groups/\(street.group)/owner", ["user_id": street.outsider.id]).0 == 400)
        let (handed, group) = try await street.admin("POST", "/groups/\(street.group)/owner", ["user_id": street.member.id])
        #expect(handed == 200 && (group["owner"] as? [String: Any])?["id"] as? String == street.member.id, "\(group)")
        let (_, entries) = try await api.call("GET", "/v1/groups/\(street.group)/audit", token: street.member.token)
        let first = (entries["items"] as? [[String: Any]])?.first
        #expect(first?["action"] as? String == "member.role_changed" && (first?["actor"] as? [String: Any])?["type"] as? String == "operator", "\(entries)")
        #expect(try await street.admin("DELETE", "/groups/\(UUID().uuidString)").0 == 404)
        #expect(try await street.admin("DELETE", "/groups/\(street.group)").0 == 204)
        #expect(try await api.call("GET", "/v1/groups/\(street.group)", token: street.member.token).0 == 404)

        // Erased: the account is gone for good.
        #expect(try await street.admin("DELETE", "/users/\(street.troll.id)").0 == 204)
        #expect(try await street.admin("GET", "/users/\(street.troll.id)").0 == 404)
        #expect(try await api.call("POST", "/v1/auth/login", login).0 == 401)

        // The tenant itself: only when the request names it.
        #expect(try await api.call("DELETE", "/v1/admin/tenants/\(api.tenant)", token: Self.operatorToken).0 == 400)
        #expect(try await api.call("DELETE", "/v1/admin/tenants/\(api.tenant)?confirm=\(api.closedTenant)", token: Self.operatorToken).0 == 400)
        #expect(try await api.call("DELETE", "/v1/admin/tenants/\(api.tenant)?confirm=\(api.tenant)", token: Self.operatorToken).0 == 204)
        #expect(try await street.admin("GET", "/users").0 == 404)
        #expect(try await api.call("GET", "/v1/me", token: street.member.token).0 == 401)
        await api.stop()
    }

    @Test func theOperatorSeedsAnInviteOnlyTenantWithItsFirstCoordinator() async throws {
        let api = try APIFixture(adminToken: Self.operatorToken)
        let invitations = "/v1/admin/tenants/\(api.closedTenant)/invitations"
        #expect(try await api.call("POST", invitations, ["email": "cora@example.org"], token: "wrong").0 == 401)
        #expect(try await api.call("POST", invitations, ["email": "cora@example.org", "role": "king"], token: Self.operatorToken).0 == 400)
        #expect(try await api.call("POST", invitations, ["email": "cora@example.org", "phone": "+4512345678"], token: Self.operatorToken).0 == 400)
        let (status, created) = try await api.call("POST", invitations, ["email": "Cora@Example.org", "role": "coordinator"], token: Self.operatorToken)
        #expect(status == 201 && created["role"] as? String == "coordinator", "\(created)")

        let closed = api.closedTenant
        let (template, token) = try await api.pool.withConnection { connection in
            let tenant = try TenantStore().find(slug: closed, on: connection)!.id
            return try connection.withTenantTransaction(tenant) {
                let row = try $0.query("SELECT template, data->>'token' AS token FROM outbox WHERE recipient = 'cora@example.org'").rows[0]
                return (try row.decode(String.self, "template"), try row.decode(String.self, "token"))
            }
        }
        #expect(template == "tenant_invitation")
        // Without it the tenant is closed; with it, Cora's account is made, a coordinator with her address proven.
        let fields: [String: Any] = ["tenant": closed, "email": "cora@example.org", "display_name": "Cora"]
        #expect(try await api.register(fields).0 == 403)
        let (registered, session) = try await api.register(fields.merging(["invitation_token": token]) { $1 })
        #expect(registered == 201, "\(session)")
        let user = try #require(session["user"] as? [String: Any])
        #expect(user["email_verified"] as? Bool == true, "\(user)")
        let (_, shown) = try await api.call("GET", "/v1/admin/tenants/\(closed)/users/\(user["id"] as? String ?? "")", token: Self.operatorToken)
        #expect(shown["coordinator"] as? Bool == true, "\(shown)")
        // Once only; and an address with an account is not invited again.
        #expect(try await api.register(["tenant": closed, "email": "cora2@example.org", "display_name": "C", "invitation_token": token]).0 == 403)
        #expect(try await api.call("POST", invitations, ["email": "cora@example.org"], token: Self.operatorToken).0 == 409)
        await api.stop()
    }
}
