import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Testing

extension OutboxDeliveryTests {
    /// The invitation journey as a neighbour lives it: every token and code reaches the test only
    /// the way it reaches a person, through the outbox's webhook, received by a sink the test runs.
    @Suite struct InvitationJourney {
        /// A server with the account routes, a webhook sink, and a worker delivering to it.
        struct Journey {
            let api: APIFixture
            let sink = WebhookSink(failures: 0)
            let sinkServer: TestServer
            let worker: OutboxWorker
            /// A database of the journey's own: its worker delivers (and scrubs) no other test's rows.
            let database: String

            init(invitationLifetime: Int = 3600) throws {
                database = try TestDatabase.makeScratch()
                api = try APIFixture(invitationLifetime: invitationLifetime, database: database)
                let sink = self.sink
                sinkServer = try TestServer(extraRoutes: { sink.route(&$0) })
                var options = OutboxWorker.Options()
                options.pollIntervalMilliseconds = 10
                options.baseBackoffSeconds = 0.05
                worker = OutboxWorker(pool: api.pool, mode: .webhook(url: URL(string: "http://127.0.0.1:\(sinkServer.port)/sink")!, secret: sink.secret),
                                      options: options, log: Log(level: .error))
                worker.start()
            }

            func person(_ fields: [String: Any], tenant: String? = nil) async throws -> APIFixture.Person {
                try await api.person(fields.merging(tenant.map { ["tenant": $0] } ?? [:]) { $1 })
            }

            func invitationToken(to recipient: String, tenant: String? = nil) async throws -> String {
                let delivery = try await sink.awaitDelivery(to: recipient, template: "invitation", tenant: tenant)
                let token = try #require((delivery["data"] as? [String: Any])?["token"] as? String)
                #expect(token.hasPrefix("riv_"))
                return token
            }

            func stop() async {
                await worker.stop()
                await sinkServer.stop()
                await api.test.stop()
                api.pool.close()
                TestDatabase.dropScratch(database)
            }
        }

        static func errorCode(_ body: [String: Any]) -> String? { (body["error"] as? [String: Any])?["code"] as? String }

        @Test func byPhoneTheTokenArrivesBySMSAndJoinsOnceForTheRightTenantOnly() async throws {
            let journey = try Journey()
            let api = journey.api
            let owner = try await journey.person(["email": "maud@example.org", "display_name": "Maud"])
            let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Birch Row"], token: owner.token).1["id"] as? String)
            let (created, invitation) = try await api.call("POST", "/v1/groups/\(group)/invitations", ["phone": "+45 11 22 33 44"], token: owner.token)
            #expect(created == 201 && invitation["token"] == nil)

            let delivery = try await journey.sink.awaitDelivery(to: "+4511223344", template: "invitation")
            #expect(delivery["channel"] as? String == "sms")
            #expect(delivery["tenant"] as? String == api.tenant)
            let data = try #require(delivery["data"] as? [String: Any])
            #expect(data["group_name"] as? String == "Birch Row" && data["inviter"] as? String == "Maud")
            let token = try await journey.invitationToken(to: "+4511223344")

            // A user of another tenant holding the token: nothing to find.
            let elsewhere = "jrny-\(UUID().uuidString.prefix(8).lowercased())"
            try await api.pool.withConnection { _ = try TenantStore().create(slug: elsewhere, name: "Elsewhere", registration: .open, on: $0) }
            let stranger = try await journey.person(["phone": "+4511223344"], tenant: elsewhere)
            let (foreign, foreignBody) = try await api.call("POST", "/v1/invitations/accept", ["token": token], token: stranger.token)
            #expect(foreign == 404 && Self.errorCode(foreignBody) == "not_found")

            let neighbour = try await journey.person(["phone": "0045 11-22-33-44", "display_name": "Ned"])
            let (accepted, joined) = try await api.call("POST", "/v1/invitations/accept", ["token": token], token: neighbour.token)
            #expect(accepted == 200 && joined["role"] as? String == "member")
            let members = try await api.call("GET", "/v1/groups/\(group)/members", token: owner.token).1["items"] as? [[String: Any]]
            #expect(members?.compactMap { $0["display_name"] as? String } == ["Maud", "Ned"])
            #expect(try await api.call("GET", "/v1/me", token: neighbour.token).1["phone_verified"] as? Bool == true)

            // Reuse, by anyone, is gone; so is a revoked invitation.
            let (reused, reusedBody) = try await api.call("POST", "/v1/invitations/accept", ["token": token], token: owner.token)
            #expect(reused == 410 && Self.errorCode(reusedBody) == "expired")
            let second = try #require(try await api.call("POST", "/v1/groups/\(group)/invitations", ["phone": "+4599887766"], token: owner.token).1["id"] as? String)
            let revokedToken = try await journey.invitationToken(to: "+4599887766")
            #expect(try await api.call("DELETE", "/v1/groups/\(group)/invitations/\(second)", token: owner.token).0 == 204)
            let late = try await journey.person(["phone": "+4599887766"])
            #expect(try await api.call("POST", "/v1/invitations/accept", ["token": revokedToken], token: late.token).0 == 410)
            let statuses = try await api.call("GET", "/v1/groups/\(group)/invitations", token: owner.token).1["items"] as? [[String: Any]]
            #expect(Set(statuses?.compactMap { $0["status"] as? String } ?? []) == ["accepted", "revoked"])
            await journey.stop()
        }

        @Test func byEmailAVerifiedAddressSeesItsInvitationsAndAnswersThemById() async throws {
            let journey = try Journey()
            let api = journey.api
            let owner = try await journey.person(["email": "olga@example.org"])
            let elm = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm"], token: owner.token).1["id"] as? String)
            let oak = try #require(try await api.call("POST", "/v1/groups", ["name": "Oak"], token: owner.token).1["id"] as? String)
            for group in [elm, oak] {
                #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "Pia@Example.org", "role": "admin"], token: owner.token).0 == 201)
            }
            let pia = try await journey.person(["email": "pia@example.org"])

            // Unverified, the address proves nothing: no list, no accepting by id.
            #expect((try await api.call("GET", "/v1/invitations", token: pia.token).1["items"] as? [Any])?.isEmpty == true)
            let elmInvitation = try await api.inTenant { _, connection in
                try connection.query("SELECT id FROM invitations WHERE group_id = \(UUID(uuidString: elm)!)").rows[0].decode(UUID.self, "id")
            }.uuidString.lowercased()
            #expect(try await api.call("POST", "/v1/invitations/accept", ["invitation_id": elmInvitation], token: pia.token).0 == 404)

            // The code arrives by email; a wrong one counts, the right one verifies.
            #expect(try await api.call("POST", "/v1/me/contacts/verify", ["channel": "email"], token: pia.token).0 == 202)
            let code = try #require(((try await journey.sink.awaitDelivery(to: "pia@example.org", template: "verification"))["data"]
                as? [String: Any])?["code"] as? String)
            #expect(code.count == 6 && code.allSatisfy(\.isNumber))
            let wrong = code == "000000" ? "111111" : "000000"
            let (badCode, badBody) = try await api.call("POST", "/v1/me/contacts/confirm", ["channel": "email", "code": wrong], token: pia.token)
            #expect(badCode == 400 && (badBody["error"] as? [String: Any])?["field"] as? String == "code")
            let (confirmed, user) = try await api.call("POST", "/v1/me/contacts/confirm", ["channel": "email", "code": code], token: pia.token)
            #expect(confirmed == 200 && user["email_verified"] as? Bool == true)

            let listed = try #require(try await api.call("GET", "/v1/invitations", token: pia.token).1["items"] as? [[String: Any]])
            #expect(Set(listed.compactMap { $0["group_name"] as? String }) == ["Elm", "Oak"])
            #expect(listed.allSatisfy { $0["token"] == nil && $0["email"] as? String == "pia@example.org" && $0["role"] as? String == "admin" })
            let (accepted, joined) = try await api.call("POST", "/v1/invitations/accept", ["invitation_id": elmInvitation], token: pia.token)
            #expect(accepted == 200 && joined["role"] as? String == "admin")
            let oakInvitation = try #require(listed.first { $0["group_name"] as? String == "Oak" }?["id"] as? String)
            // Only the addressee declines; a stranger cannot tell the invitation exists.
            let stranger = try await journey.person(["email": "quentin@example.org"])
            #expect(try await api.call("POST", "/v1/invitations/\(oakInvitation)/decline", token: stranger.token).0 == 404)
            #expect(try await api.call("POST", "/v1/invitations/\(oakInvitation)/decline", token: pia.token).0 == 204)
            #expect(try await api.call("POST", "/v1/invitations/\(oakInvitation)/decline", token: pia.token).0 == 410)
            #expect((try await api.call("GET", "/v1/invitations", token: pia.token).1["items"] as? [Any])?.isEmpty == true)
            let groups = try await api.call("GET", "/v1/groups", token: pia.token).1["items"] as? [[String: Any]]
            #expect(groups?.compactMap { $0["name"] as? String } == ["Elm"])
            await journey.stop()
        }

        @Test func anInvitationPastItsConfiguredLifetimeIsExpired() async throws {
            let journey = try Journey(invitationLifetime: 1)
            let api = journey.api
            let owner = try await journey.person(["email": "rosa@example.org"])
            let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Fir"], token: owner.token).1["id"] as? String)
            #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "sam@example.org"], token: owner.token).0 == 201)
            let token = try await journey.invitationToken(to: "sam@example.org")
            let sam = try await journey.person(["email": "sam@example.org"])
            // Expiry is a moment in time: wait (bounded) for the owner's list to show it.
            var status: String?
            try await Poll.until {
                status = (try await api.call("GET", "/v1/groups/\(group)/invitations", token: owner.token).1["items"] as? [[String: Any]])?.first?["status"] as? String
                return status == "expired"
            }
            #expect(status == "expired")
            let (gone, body) = try await api.call("POST", "/v1/invitations/accept", ["token": token], token: sam.token)
            #expect(gone == 410 && Self.errorCode(body) == "expired")
            // A lapsed invitation does not block a fresh one to the same address.
            #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "sam@example.org"], token: owner.token).0 == 201)
            await journey.stop()
        }

        @Test func anInviteOnlyNeighbourhoodTakesNewcomersWithAnInvitationAndSeatsThemAtOnce() async throws {
            let journey = try Journey()
            let api = journey.api
            // The operator opens the tenant for its organiser, then closes it.
            let closed = api.closedTenant
            try await api.pool.withConnection { _ = try TenantStore().update(slug: closed, name: nil, registration: .open, on: $0) }
            let organiser = try await journey.person(["email": "tove@example.org"], tenant: closed)
            try await api.pool.withConnection { _ = try TenantStore().update(slug: closed, name: nil, registration: .inviteOnly, on: $0) }
            let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Gated"], token: organiser.token).1["id"] as? String)
            #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "uli@example.org"], token: organiser.token).0 == 201)
            let token = try await journey.invitationToken(to: "uli@example.org", tenant: closed)

            let base: [String: Any] = ["tenant": closed, "email": "uli@example.org", "password": "a long enough password", "display_name": "Uli"]
            let (refused, refusedBody) = try await api.call("POST", "/v1/auth/register", base)
            #expect(refused == 403 && (refusedBody["error"] as? [String: Any])?["field"] as? String == "invitation_token")
            #expect(try await api.call("POST", "/v1/auth/register", base.merging(["invitation_token": "riv_forged"]) { $1 }).0 == 403)
            // An invitation of another tenant does not open this one.
            let host = try await journey.person(["email": "wim@example.org"])
            let open = try #require(try await api.call("POST", "/v1/groups", ["name": "Open"], token: host.token).1["id"] as? String)
            #expect(try await api.call("POST", "/v1/groups/\(open)/invitations", ["email": "uli@example.org"], token: host.token).0 == 201)
            let foreign = try await journey.invitationToken(to: "uli@example.org", tenant: api.tenant)
            let (wrongTenant, wrongBody) = try await api.call("POST", "/v1/auth/register", base.merging(["invitation_token": foreign]) { $1 })
            #expect(wrongTenant == 403 && (wrongBody["error"] as? [String: Any])?["field"] as? String == "invitation_token")
            let (registered, body) = try await api.call("POST", "/v1/auth/register", base.merging(["invitation_token": token]) { $1 })
            #expect(registered == 201)
            let user = try #require(body["user"] as? [String: Any])
            #expect(user["email_verified"] as? Bool == true)
            let groups = try await api.call("GET", "/v1/groups", token: body["token"] as? String).1["items"] as? [[String: Any]]
            #expect(groups?.map { $0["id"] as? String } == [group])
            // Single use, at registration too.
            let again = base.merging(["email": "vera@example.org", "invitation_token": token]) { $1 }
            #expect(try await api.call("POST", "/v1/auth/register", again).0 == 410)
            await journey.stop()
        }
    }
}
