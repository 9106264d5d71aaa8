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

    /// A failed invitation's token was deleted with its failure: retried (`roost outbox retry`),
    /// it goes with a fresh token that works, and the lost one no longer does; a failed code of
    /// another kind is refused, saying how its person gets a new one.
    @Test func aRetriedInvitationCarriesAFreshTokenThatWorks() async throws {
        let api = try APIFixture()
        let owner = try await api.person(["email": "olu@example.org"])
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm"], token: owner.token).1["id"] as? String)
        let invitation = try #require(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "dee@example.org"], token: owner.token)
            .1["id"] as? String)
        let lost = try await deliveredToken(api, invitation: invitation).token
        // The relay refuses it for good: the row fails and its token is scrubbed.
        let delivery = try await api.inTenant { _, connection -> UUID in
            let id = try connection.query("SELECT id FROM outbox WHERE data->>'invitation_id' = \(invitation)").rows[0].decode(UUID.self, "id")
            try OutboxStore().record([DeliveryRecord(id: id, step: .failed(error: "550 mailbox unavailable"))], maxAttempts: 5, on: connection)
            return id
        }
        #expect(try await api.inTenant { _, connection in
            try connection.query("SELECT data ? 'token' AS has FROM outbox WHERE id = \(delivery)").rows[0].decode(Bool.self, "has")
        } == false)
        let outcome = try await api.inTenant { tenant, connection in try DeliveryRetry.retry(delivery, tenant: tenant, on: connection) }
        #expect(outcome == .reissued)
        let fresh = try await deliveredToken(api, invitation: invitation).token
        #expect(fresh.hasPrefix("riv_") && fresh != lost)
        let (refused, _) = try await api.call("POST", "/v1/auth/register", ["tenant": api.tenant, "email": "eve@example.org", "password": "a long enough password",
                                                                          "display_name": "Eve", "invitation_token": lost])
        #expect(refused == 403, "the lost token no longer works")
        let (joined, dee) = try await api.call("POST", "/v1/auth/register", ["tenant": api.tenant, "email": "dee@example.org",
                                                                           "password": "a long enough password", "display_name": "Dee", "invitation_token": fresh])
        #expect(joined == 201, "\(dee)")
        let members = try await api.call("GET", "/v1/groups/\(group)/members", token: owner.token).1["items"] as? [[String: Any]]
        #expect(members?.contains { $0["display_name"] as? String == "Dee" } == true)
        // Accepted now: the same delivery failing again cannot be given another token.
        try await api.inTenant { _, connection in
            try OutboxStore().record([DeliveryRecord(id: delivery, step: .failed(error: "550 again"))], maxAttempts: 5, on: connection)
        }
        guard case .refused(let why)? = try await api.inTenant({ tenant, connection in try DeliveryRetry.retry(delivery, tenant: tenant, on: connection) })
        else { Issue.record("a used invitation was retried"); return }
        #expect(why.contains("no longer pending"))
        // A verification code, failed: refused, naming the way to a new one.
        let code = try await api.inTenant { tenant, connection -> UUID in
            let id = try OutboxStore().enqueue(tenant: tenant, channel: .email, recipient: "x@example.org", template: .verification,
                                               data: RawJSON(#"{"code":"12345678"}"#), on: connection)
            try OutboxStore().record([DeliveryRecord(id: id, step: .failed(error: "550"))], maxAttempts: 5, on: connection)
            return id
        }
        guard case .refused(let how)? = try await api.inTenant({ tenant, connection in try DeliveryRetry.retry(code, tenant: tenant, on: connection) })
        else { Issue.record("a scrubbed code was retried"); return }
        #expect(how.contains("asks for a new code"))
        try await api.inTenant { _, connection in try OutboxStore().dropJobs([delivery, code], on: connection) }
        await api.stop()
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
