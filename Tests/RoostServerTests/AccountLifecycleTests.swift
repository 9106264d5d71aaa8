import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// Verification codes' limits and account deletion, over real sockets and the real database.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct AccountLifecycleTests {
    static func error(_ body: [String: Any]) -> [String: Any] { body["error"] as? [String: Any] ?? [:] }

    @Test func verificationCodesAreHashedLimitedToFiveTriesAndExpire() async throws {
        let api = try APIFixture()
        let ada = try await api.person(["email": "ada@example.org", "phone": "+4520304050"])
        #expect(try await api.call("POST", "/v1/me/contacts/verify", ["channel": "phone"], token: ada.token).0 == 202)
        // One send a minute: each costs the tenant an SMS.
        let (again, againBody) = try await api.call("POST", "/v1/me/contacts/verify", ["channel": "phone"], token: ada.token)
        #expect(again == 429 && Self.error(againBody)["code"] as? String == "rate_limited")
        let (stored, outbox) = try await api.inTenant { _, connection in
            let row = try connection.query("SELECT code_hash FROM contact_verifications").rows[0]
            let sent = try connection.query("SELECT channel, recipient, template FROM outbox WHERE recipient = '+4520304050'").rows[0]
            return (try row.decode(Data.self, "code_hash").count,
                    [try sent.decode(String.self, "channel"), try sent.decode(String.self, "template")])
        }
        #expect(stored == 32)
        #expect(outbox == ["sms", "verification"])

        // Five wrong codes are each a 400; after that even a guess is refused.
        let wrongCodes = ["000001", "000002", "000003", "000004", "000005"]
        for (index, code) in wrongCodes.enumerated() {
            let (status, body) = try await api.call("POST", "/v1/me/contacts/confirm", ["channel": "phone", "code": code], token: ada.token)
            // A 1-in-a-million chance that a wrong guess is the code; then the rest is moot.
            if status == 200 { return }
            #expect(status == 400, "try \(index + 1)")
            #expect((Self.error(body)["message"] as? String)?.contains("\(4 - index) tr") == true)
        }
        let (locked, lockedBody) = try await api.call("POST", "/v1/me/contacts/confirm", ["channel": "phone", "code": "123456"], token: ada.token)
        #expect(locked == 429 && Self.error(lockedBody)["code"] as? String == "rate_limited")

        // An expired code is gone; malformed codes and unknown channels name their field.
        #expect(try await api.call("POST", "/v1/me/contacts/verify", ["channel": "email"], token: ada.token).0 == 202)
        try await api.inTenant { _, connection in
            try connection.query("UPDATE contact_verifications SET expires_at = now() - interval '1 second' WHERE channel = 'email'")
        }
        let (expired, expiredBody) = try await api.call("POST", "/v1/me/contacts/confirm", ["channel": "email", "code": "123456"], token: ada.token)
        #expect(expired == 410 && Self.error(expiredBody)["code"] as? String == "expired")
        for (body, field) in [(["channel": "email", "code": "12345"], "code"), (["channel": "email", "code": "12345a"], "code"),
                              (["channel": "fax", "code": "123456"], "channel"), (["channel": "email", "code": "123456"], "channel")] {
            let (status, answer) = try await api.call("POST", "/v1/me/contacts/confirm", body, token: ada.token)
            #expect(status == 400 && Self.error(answer)["field"] as? String == field, "\(body) → \(status) \(answer)")
        }
        // Nothing to verify: a phone-less account, or an address verified already.
        let bea = try await api.person(["email": "bea@example.org"])
        #expect(try await api.call("POST", "/v1/me/contacts/verify", ["channel": "phone"], token: bea.token).0 == 400)
        try await api.inTenant { _, connection in try connection.query("UPDATE users SET email_verified = true WHERE email = 'bea@example.org'") }
        #expect(try await api.call("POST", "/v1/me/contacts/verify", ["channel": "email"], token: bea.token).0 == 409)
        await api.test.stop()
        api.pool.close()
    }

    @Test func deletingAnAccountErasesItAndHandsEachOwnedGroupOn() async throws {
        let api = try APIFixture()
        let owner = try await api.person(["email": "cleo@example.org", "phone": "+4530405060", "display_name": "Cleo"])
        let older = try await api.person(["email": "dag@example.org"])
        let admin = try await api.person(["email": "eva@example.org"])
        let member = try await api.person(["email": "finn@example.org"])
        // Three owned groups: one with an admin (who inherits over an older plain member),
        // one with only a member (who inherits), one alone (deleted); and one joined as a member.
        let withAdmin = try #require(try await api.call("POST", "/v1/groups", ["name": "A"], token: owner.token).1["id"] as? String)
        try await api.addMember(older.id, to: withAdmin, role: "member")
        try await api.addMember(admin.id, to: withAdmin, role: "admin")
        let withMember = try #require(try await api.call("POST", "/v1/groups", ["name": "B"], token: owner.token).1["id"] as? String)
        try await api.addMember(member.id, to: withMember, role: "member")
        let alone = try #require(try await api.call("POST", "/v1/groups", ["name": "C"], token: owner.token).1["id"] as? String)
        let joined = try #require(try await api.call("POST", "/v1/groups", ["name": "D"], token: member.token).1["id"] as? String)
        try await api.addMember(owner.id, to: joined, role: "member")
        #expect(try await api.call("POST", "/v1/me/devices", ["platform": "fcm", "token": "device-1"], token: owner.token).0 == 201)
        let second = try #require(try await api.call("POST", "/v1/auth/login",
                                                     ["tenant": api.tenant, "email": "cleo@example.org", "password": "a long enough password"]).1["token"] as? String)

        // The password must come with the request: a stolen session alone cannot erase the account.
        #expect(try await api.call("DELETE", "/v1/me", token: owner.token).0 == 400)
        #expect(try await api.call("DELETE", "/v1/me", ["password": "not the password"], token: owner.token).0 == 403)
        #expect(try await api.call("DELETE", "/v1/me", ["password": "a long enough password"], token: owner.token).0 == 204)

        // Every session ends at once, and nobody can sign in as the account again.
        #expect(try await api.call("GET", "/v1/me", token: owner.token).0 == 401)
        #expect(try await api.call("GET", "/v1/me", token: second).0 == 401)
        #expect(try await api.call("POST", "/v1/auth/login", ["tenant": api.tenant, "email": "cleo@example.org", "password": "a long enough password"]).0 == 401)
        // Personal data is gone; the row stays as "deleted user".
        let erased = try await api.inTenant { _, connection in
            let row = try connection.query("""
                SELECT email, phone, password_hash, home, display_name,
                       (SELECT count(*) FROM devices d WHERE d.user_id = u.id) AS devices,
                       (SELECT count(*) FROM sessions s WHERE s.user_id = u.id) AS sessions
                FROM users u WHERE id = \(UUID(uuidString: owner.id)!)
                """).rows[0]
            return [try row.decode(String?.self, "email"), try row.decode(String?.self, "phone"), try row.decode(String?.self, "password_hash"),
                    try row.decode(String?.self, "home"), try row.decode(String.self, "display_name"),
                    String(try row.decode(Int.self, "devices")), String(try row.decode(Int.self, "sessions"))]
        }
        #expect(erased == [nil, nil, nil, nil, "deleted user", "0", "0"])
        // The same address can start afresh.
        _ = try await api.person(["email": "cleo@example.org"])

        func roles(_ group: String, as token: String) async throws -> [String: String] {
            let items = try await api.call("GET", "/v1/groups/\(group)/members", token: token).1["items"] as? [[String: Any]] ?? []
            return Dictionary(uniqueKeysWithValues: items.compactMap { item in
                (item["user_id"] as? String).map { ($0, item["role"] as? String ?? "") }
            })
        }
        #expect(try await roles(withAdmin, as: admin.token) == [admin.id: "owner", older.id: "member"])
        #expect(try await roles(withMember, as: member.token) == [member.id: "owner"])
        #expect(try await roles(joined, as: member.token) == [member.id: "owner"])
        #expect(try await api.inTenant { _, connection in
            try connection.query("SELECT count(*) AS n FROM groups WHERE id = \(UUID(uuidString: alone)!)").rows[0].decode(Int.self, "n")
        } == 0)
        // The log says what happened: the owner left, then the system handed the group on.
        let events = try await api.inTenant { _, connection in
            try GroupEventLog().events(group: UUID(uuidString: withAdmin)!, after: 0, limit: 50, on: connection).map { "\($0.event) \($0.data)" }
        }
        #expect(events.suffix(2).map { $0.split(separator: " ")[0] } == ["member.left", "member.role_changed"])
        #expect(events.last?.contains(#""to": "owner""#) == true && events.last?.contains(admin.id) == true)
        await api.test.stop()
        api.pool.close()
    }
}
