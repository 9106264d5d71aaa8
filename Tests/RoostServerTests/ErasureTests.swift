import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Testing

/// Deleting an account leaves the person's name, email and phone nowhere: not in the event log,
/// not in any outbox row, not in any API answer (issue: hostile users, "Secrets and erasure").
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct ErasureTests {
    @Test func afterDeletionNoEventOutboxRowOrAnswerShowsTheName() async throws {
        let api = try APIFixture()
        let name = "Zephyrine Quill", email = "zephyrine@example.org", phone = "+4571829304"
        let zeph = try await api.person(["email": email, "phone": phone, "display_name": name])
        let neighbour = try await api.person(["email": "nel@example.org", "display_name": "Nel"])
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Quill Lane"], token: zeph.token).1["id"] as? String)
        try await api.addMember(neighbour.id, to: group, role: "member")
        #expect(try await api.call("POST", "/v1/me/devices", ["platform": "fcm", "token": "nel-phone"], token: neighbour.token).0 == 201)
        #expect(try await api.call("POST", "/v1/me/devices", ["platform": "fcm", "token": "zeph-phone"], token: zeph.token).0 == 201)
        // An alert (pushed to Nel with Zeph's name), an invitation she sent, a code pending to her
        // address, and a missed check-in whose alert text carries her name.
        #expect(try await api.call("POST", "/v1/groups/\(group)/messages", ["client_msg_id": "a1", "text": "Smoke at no. 4", "kind": "alert",
                                                                          "severity": "red"], token: zeph.token).0 == 201)
        #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "newcomer@example.org"], token: zeph.token).0 == 201)
        #expect(try await api.call("POST", "/v1/me/contacts/verify", ["channel": "email"], token: zeph.token).0 == 202)
        let checkin = try #require(try await api.call("POST", "/v1/checkins", ["group_id": group, "due_in_s": 600, "grace_s": 0], token: zeph.token).1["id"] as? String)
        try await api.inTenant { _, connection in
            let id = UUID(uuidString: checkin)!
            try connection.query("UPDATE checkins SET due_at = now() - interval '1 second' WHERE id = \(id)")
            try connection.query("UPDATE checkin_deadlines SET due_at = now() - interval '1 second' WHERE checkin_id = \(id)")
        }
        _ = try await DeadlineScheduler(pool: api.pool, log: Log(level: .error)).runOnce()
        // (The end-to-end tests' nodes share the database and may fire it first; either way it fires.)
        func traces(_ needle: String) async throws -> Int {
            try await api.inTenant { _, connection in
                try connection.query("""
                    SELECT (SELECT count(*) FROM group_events WHERE data::text LIKE '%' || \(needle) || '%')
                         + (SELECT count(*) FROM outbox WHERE data::text LIKE '%' || \(needle) || '%' OR recipient = \(needle))
                         + (SELECT count(*) FROM messages WHERE text LIKE '%' || \(needle) || '%') AS n
                    """).rows[0].decode(Int.self, "n")
            }
        }
        try await Poll.until { try await traces("\(name) did not check in on time") > 0 }
        #expect(try await traces(name) >= 4, "the setup wrote the name down")
        #expect(try await traces(email) >= 1)

        #expect(try await api.call("DELETE", "/v1/me", ["password": "a long enough password"], token: zeph.token).0 == 204)

        for needle in [name, email, phone, "zeph-phone"] {
            #expect(try await traces(needle) == 0, "\(needle) is still in the database")
        }
        // Every answer Nel gets about the group.
        var answers = ""
        for path in ["/v1/groups/\(group)/events?after=0&limit=200", "/v1/groups/\(group)/messages", "/v1/groups/\(group)/alerts",
                     "/v1/alerts?status=open", "/v1/groups/\(group)/members", "/v1/groups/\(group)"] {
            let (status, body) = try await api.call("GET", path, token: neighbour.token)
            #expect(status == 200, "\(path)")
            answers += String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        }
        for needle in [name, email, phone] { #expect(!answers.contains(needle), "\(needle) in an answer") }
        #expect(answers.contains("deleted user"))
        await api.stop()
    }
}
