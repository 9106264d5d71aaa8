import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// The smaller ways one ordinary account was found to overreach (docs/SECURITY.md, "Limits"
/// and "Authorization"), each tried as that account would, over the real API and database.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL"))
struct HostileMemberTests {
    @Test func anAccountHoldsAtMostTwentyStreamsOnANode() async throws {
        let api = try APIFixture(stream: true)
        let ann = try await api.person(email: "ann@example.org")
        var streams: [WebSocketTestClient] = []
        for _ in 0..<StreamRoutes.maxPerAccount {
            let stream = try await WebSocketTestClient.connect(port: api.test.port, path: "/v1/stream", token: ann.token)
            #expect(await stream.receiveJSON()?["type"] as? String == "ready")
            streams.append(stream)
        }
        let refused = try TestClient(port: api.test.port)
        refused.send("GET /v1/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(ann.token)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let answer = try #require(await refused.readResponse())
        #expect(answer.status == 429 && answer.text.contains("rate_limited") && answer.headers["retry-after"] != nil, "\(answer.status) \(answer.text)")
        // Another account is not held back by Ann's.
        let bob = try await api.person(email: "bob@example.org")
        let other = try await WebSocketTestClient.connect(port: api.test.port, path: "/v1/stream", token: bob.token)
        #expect(await other.receiveJSON()?["type"] as? String == "ready")
        await api.stop()
    }

    @Test func postsAreLimitedPerAccountAndEveryPrivateAnswerSaysNoStore() async throws {
        var limits = AbuseLimits.generous
        limits.postsPerAccountPerMinute = 5
        limits.postPaceClock = { 1000 }  // the bucket refills by nothing while the test runs, however slowly
        let api = try APIFixture(limits: limits)
        let ann = try await api.person(email: "ann@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Chatty"], token: ann.token).1["id"] as? String)
        for index in 0..<5 {
            #expect(try await api.call("POST", "/v1/groups/\(group)/messages", ["client_msg_id": "m\(index)", "text": "hi", "kind": "chat"],
                                       token: ann.token).0 == 201)
        }
        let flood = try await AbuseLimitTests.request(api, "POST", "/v1/groups/\(group)/messages",
                                                      ["client_msg_id": "m5", "text": "hi", "kind": "chat"], token: ann.token)
        #expect(flood.status == 429 && Int(flood.headers["retry-after"] ?? "").map { $0 >= 1 } == true)
        // What a signed-in person is answered is theirs alone: no cache on the way keeps it.
        let client = try TestClient(port: api.test.port)
        client.send("GET /v1/me HTTP/1.1\r\nAuthorization: Bearer \(ann.token)\r\n\r\n")
        let me = try #require(await client.readResponse())
        #expect(me.status == 200 && me.headers["cache-control"] == "no-store")
        await api.stop()
    }

    @Test func onlyTheOwnerRemovesAnAdminAndRedactionsAreAudited() async throws {
        let api = try APIFixture()
        let owner = try await api.person(email: "olga@example.org")
        let (abe, ada) = (try await api.person(email: "abe@example.org"), try await api.person(email: "ada@example.org"))
        let member = try await api.person(email: "max@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Admins"], token: owner.token).1["id"] as? String)
        for admin in [abe, ada] { try await api.addMember(admin.id, to: group, role: "admin") }
        try await api.addMember(member.id, to: group, role: "member")
        let (refused, body) = try await api.call("DELETE", "/v1/groups/\(group)/members/\(ada.id)", token: abe.token)
        #expect(refused == 403 && body.errorCode == "forbidden", "\(body)")
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/members/\(member.id)", token: abe.token).0 == 204, "members, yes")
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/members/\(abe.id)", token: abe.token).0 == 204, "an admin may leave")
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/members/\(ada.id)", token: owner.token).0 == 204)

        let (_, posted) = try await api.call("POST", "/v1/groups/\(group)/messages", ["client_msg_id": "x", "text": "rude", "kind": "chat"],
                                             token: owner.token)
        let seq = try #require(posted["seq"] as? Int)
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/messages/\(seq)", token: owner.token).0 == 204)
        let (_, audit) = try await api.call("GET", "/v1/groups/\(group)/audit", token: owner.token)
        let entries = audit["items"] as? [[String: Any]] ?? []
        let redacted = try #require(entries.first { $0["action"] as? String == "message.redacted" }, "\(audit)")
        #expect((redacted["target"] as? [String: Any])?["id"] as? String == String(seq))
        await api.stop()
    }

    @Test func aDeliveryErrorWithANULInItIsKeptAndTheRowSettles() async throws {
        let api = try APIFixture()
        let (status, error) = try await api.inTenant { tenant, connection -> (String, String?) in
            let id = try OutboxStore().enqueue(tenant: tenant, channel: .email, recipient: "x@example.org", template: .verification,
                                               data: RawJSON("{}"), on: connection)
            // What a hostile mail relay might answer, NUL and all.
            try OutboxStore().record([DeliveryRecord(id: id, step: .failed(error: "550 no\u{0}such\r\nuser"))], maxAttempts: 6, on: connection)
            let row = try connection.query("SELECT status, last_error FROM outbox WHERE id = \(id)").rows[0]
            return (try row.decode(String.self, "status"), try row.decode(String?.self, "last_error"))
        }
        #expect(status == "failed" && error == "550 no\u{FFFD}such\u{FFFD}\u{FFFD}user", "\(String(describing: error))")
        await api.stop()
    }

    @Test func registeringWithATakenAddressTellsItsOwner() async throws {
        let api = try APIFixture()
        _ = try await api.person(email: "ann@example.org")
        _ = try await api.person(email: "bob@example.org")
        try await api.inTenant { _, connection in try connection.query("UPDATE users SET email_verified = (email = 'ann@example.org')") }
        for email in ["ann@example.org", "bob@example.org"] {
            let (status, body) = try await api.register(["email": email, "display_name": "Someone else"])
            #expect(status == 409 && body.errorCode == "conflict")
        }
        let told = try await api.inTenant { _, connection in
            try connection.query("SELECT recipient FROM outbox WHERE template = 'registration_attempted'").rows.map { try $0.decode(String.self, "recipient") }
        }
        #expect(told == ["ann@example.org"], "only a proven address is written to")
        await api.stop()
    }
}
