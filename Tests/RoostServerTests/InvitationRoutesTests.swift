import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct InvitationRoutesTests {
    /// The token as the outbox would deliver it (test-only: read straight from the row).
    func deliveredToken(_ api: APIFixture, invitation: String) async throws -> (token: String, channel: String, to: String) {
        try await api.inTenant { _, connection in
                guard let row = try connection.query("""
                    SELECT data->>'token' AS token, channel, recipient FROM outbox WHERE data->>'invitation_id' = \(invitation)
                    """).first else { throw TestClientError("no outbox delivery for invitation \(invitation)") }
                return (try row.decode(String.self, "token"), try row.decode(String.self, "channel"), try row.decode(String.self, "recipient"))
        }
    }

    @Test func invitedByPhoneTheNeighbourJoinsWithTheTokenAndTheAddressIsVerified() async throws {
        let api = try APIFixture()
        let owner = try await api.person(["email": "olu@example.org"])
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm"], token: owner.token).1["id"] as? String)
        let (status, invitation) = try await api.call("POST", "/v1/groups/\(group)/invitations", ["phone": "+45 87 65 43 21"], token: owner.token)
        #expect(status == 201)
        #expect(invitation["status"] as? String == "pending")
        #expect(invitation["phone"] as? String == "+4587654321")
        #expect(invitation["token"] == nil)
        let id = try #require(invitation["id"] as? String)
        #expect(id == id.lowercased())
        let delivered = try await deliveredToken(api, invitation: id)
        #expect(delivered.channel == "sms" && delivered.to == "+4587654321" && delivered.token.hasPrefix("riv_"))

        let invitee = try await api.person(["phone": "0045 87 65 43 21"])
        let (accepted, joined) = try await api.call("POST", "/v1/invitations/accept", ["token": delivered.token], token: invitee.token)
        #expect(accepted == 200)
        #expect(joined["role"] as? String == "member")
        #expect((joined["group"] as? [String: Any])?["id"] as? String == group)
        #expect(try await api.call("GET", "/v1/me", token: invitee.token).1["phone_verified"] as? Bool == true)
        let members = try await api.call("GET", "/v1/groups/\(group)/members", token: invitee.token).1["items"] as? [[String: Any]]
        #expect(members?.map { $0["user_id"] as? String } == [owner.id, invitee.id])

        // Single use.
        let other = try await api.person(["email": "pat@example.org"])
        #expect(try await api.call("POST", "/v1/invitations/accept", ["token": delivered.token], token: other.token).0 == 410)
        await api.test.stop()
        api.pool.close()
    }

    @Test func revokedAndExpiredInvitationsAreGoneAndOtherTenantsSeeNothing() async throws {
        let api = try APIFixture(invitationLifetime: 60)
        let owner = try await api.person(["email": "quin@example.org"])
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Oak"], token: owner.token).1["id"] as? String)
        let first = try #require(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "ray@example.org"], token: owner.token).1["id"] as? String)
        let revokedToken = try await deliveredToken(api, invitation: first).token
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/invitations/\(first)", token: owner.token).0 == 204)
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/invitations/\(first)", token: owner.token).0 == 404)
        let ray = try await api.person(["email": "ray@example.org"])
        #expect(try await api.call("POST", "/v1/invitations/accept", ["token": revokedToken], token: ray.token).0 == 410)

        let second = try #require(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "sol@example.org"], token: owner.token).1["id"] as? String)
        let expiringToken = try await deliveredToken(api, invitation: second).token
        try await api.inTenant { _, connection in
            try connection.query("UPDATE invitations SET expires_at = now() - interval '1 second' WHERE id = \(UUID(uuidString: second)!)")
        }
        let sol = try await api.person(["email": "sol@example.org"])
        let (expired, body) = try await api.call("POST", "/v1/invitations/accept", ["token": expiringToken], token: sol.token)
        #expect(expired == 410)
        #expect((body["error"] as? [String: Any])?["code"] as? String == "expired")

        // A user of another tenant presenting a token gets 404.
        let third = try #require(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "tia@example.org"], token: owner.token).1["id"] as? String)
        let token = try await deliveredToken(api, invitation: third).token
        let elsewhere = "inv-\(UUID().uuidString.prefix(8).lowercased())"
        try await api.pool.withConnection { _ = try TenantStore().create(slug: elsewhere, name: "Elsewhere", registration: .open, on: $0) }
        let (_, stranger) = try await api.call("POST", "/v1/auth/register",
                                               ["tenant": elsewhere, "email": "tia@example.org", "password": "a long enough password", "display_name": "Tia"])
        #expect(try await api.call("POST", "/v1/invitations/accept", ["token": token], token: stranger["token"] as? String).0 == 404)
        await api.test.stop()
        api.pool.close()
    }

    @Test func onlyManagersInviteAndNobodyIsInvitedTwice() async throws {
        let api = try APIFixture()
        let owner = try await api.person(["email": "uma@example.org"])
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Ash"], token: owner.token).1["id"] as? String)
        let first = try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "vic@example.org"], token: owner.token)
        #expect(first.0 == 201)
        #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "VIC@example.org"], token: owner.token).0 == 409)
        #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "uma@example.org"], token: owner.token).0 == 409)
        #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "a@example.org", "phone": "+4512345678"], token: owner.token).0 == 400)
        #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "w@example.org", "role": "owner"], token: owner.token).0 == 400)
        // A member (joined by invitation) may not invite; an outsider sees no group.
        let vic = try await api.person(["email": "vic@example.org"])
        let token = try await deliveredToken(api, invitation: try #require(first.1["id"] as? String)).token
        #expect(try await api.call("POST", "/v1/invitations/accept", ["token": token], token: vic.token).0 == 200)
        #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "x@example.org"], token: vic.token).0 == 403)
        #expect(try await api.call("GET", "/v1/groups/\(group)/invitations", token: vic.token).0 == 403)
        let outsider = try await api.person(["email": "wyn@example.org"])
        #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "x@example.org"], token: outsider.token).0 == 404)
        let list = try await api.call("GET", "/v1/groups/\(group)/invitations", token: owner.token).1["items"] as? [[String: Any]]
        #expect(list?.map { $0["status"] as? String } == ["accepted"])
        #expect(try await api.call("POST", "/v1/invitations/accept", ["token": "riv_forged"], token: vic.token).0 == 404)
        await api.test.stop()
        api.pool.close()
    }
}
