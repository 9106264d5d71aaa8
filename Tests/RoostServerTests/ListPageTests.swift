import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

/// Every list keeps API.md's list rules: `limit` 1..200 and a `next` that, followed to its end,
/// gives each item exactly once in the unpaged order, ties on the sort time broken by id (the
/// rows here are made to share their time), and a cursor that is not a `next` is a 400.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct ListPageTests {
    /// The ids of every page of `path` at `limit`, following `next`; and the ids of one page of 200.
    func walk(_ api: APIFixture, _ path: String, limit: Int, key: String = "id", token: String) async throws -> (paged: [String], whole: [String]) {
        let separator = path.contains("?") ? "&" : "?"
        var paged: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            let query = "\(separator)limit=\(limit)" + (cursor.map { "&cursor=\($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)" } ?? "")
            let (status, body) = try await api.call("GET", path + query, token: token)
            try #require(status == 200, "\(path): \(body)")
            let items = try #require(body["items"] as? [[String: Any]])
            #expect(items.count <= limit)
            paged += items.map { "\($0[key]!)" }
            cursor = body["next"] as? String
            pages += 1
        } while cursor != nil && pages < 50
        let whole = try #require(try await api.call("GET", path + "\(separator)limit=200", token: token).1["items"] as? [[String: Any]])
        return (paged, whole.map { "\($0[key]!)" })
    }

    @Test func everyListPagesThroughEachItemOnceInOrder() async throws {
        let api = try APIFixture()
        let owner = try await api.person(email: "ola@example.org")
        // Groups, two of them with the same name and names a cursor must carry safely.
        var groups: [String] = []
        for name in ["Elm", "Elm", "Ash. Row/1+2=3", "Ünïcode lane", "birch"] {
            let (status, body) = try await api.call("POST", "/v1/groups", ["name": name], token: owner.token)
            try #require(status == 201, "\(body)")
            groups.append(try #require(body["id"] as? String))
        }
        var result = try await walk(api, "/v1/groups", limit: 2, token: owner.token)
        #expect(result.paged == result.whole && Set(result.paged) == Set(groups), "\(result)")

        // Members: joined one by one, then some made to share a time (the order falls back to ids).
        let group = groups[0]
        var members = [owner.id]
        for index in 0..<6 {
            let person = try await api.person(email: "m\(index)@example.org")
            try await api.addMember(person.id, to: group, role: index % 3 == 0 ? "admin" : "member")
            members.append(person.id)
        }
        try await api.inTenant { _, connection in
            try connection.query("UPDATE memberships SET joined_at = (SELECT min(joined_at) FROM memberships WHERE group_id = \(UUID(uuidString: group)!) AND role = 'member') WHERE group_id = \(UUID(uuidString: group)!) AND role = 'member'")
        }
        result = try await walk(api, "/v1/groups/\(group)/members", limit: 2, key: "user_id", token: owner.token)
        #expect(result.paged == result.whole && Set(result.paged) == Set(members), "\(result)")
        #expect(result.paged.first == owner.id)

        // A group's invitations, newest first, all sharing one time.
        for index in 0..<5 {
            #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "guest\(index)@example.org"], token: owner.token).0 == 201)
        }
        // And the invitations addressed to one person, from three groups.
        let guest = try await api.person(email: "guest@example.org")
        for other in groups.prefix(3) {
            #expect(try await api.call("POST", "/v1/groups/\(other)/invitations", ["email": "guest@example.org"], token: owner.token).0 == 201)
        }
        try await api.inTenant { _, connection in
            try connection.query("UPDATE invitations SET created_at = (SELECT min(created_at) FROM invitations)")
            try connection.query("UPDATE users SET email_verified = true WHERE email = 'guest@example.org'")
        }
        result = try await walk(api, "/v1/groups/\(group)/invitations", limit: 2, token: owner.token)
        #expect(result.paged == result.whole && result.paged.count == 6, "\(result)")
        result = try await walk(api, "/v1/invitations", limit: 1, token: guest.token)
        #expect(result.paged == result.whole && result.paged.count == 3, "\(result)")

        // Check-ins, started and completed one after another.
        for _ in 0..<5 {
            let (status, checkin) = try await api.call("POST", "/v1/checkins", ["group_id": group, "due_in_s": 3600], token: owner.token)
            try #require(status == 201, "\(checkin)")
            #expect(try await api.call("POST", "/v1/checkins/\(checkin["id"]!)/complete", token: owner.token).0 == 200)
        }
        result = try await walk(api, "/v1/checkins", limit: 2, token: owner.token)
        #expect(result.paged == result.whole && result.paged.count == 5, "\(result)")
        result = try await walk(api, "/v1/checkins?status=completed", limit: 3, token: owner.token)
        #expect(result.paged == result.whole && result.paged.count == 5, "\(result)")

        // Open alerts across groups, two of them opened at one time in one group.
        for target in [groups[0], groups[0], groups[1], groups[2]] {
            let (status, body) = try await api.call("POST", "/v1/groups/\(target)/messages",
                                                    ["client_msg_id": UUID().uuidString, "text": "Gate open", "kind": "alert", "severity": "amber"],
                                                    token: owner.token)
            try #require(status == 201, "\(body)")
        }
        try await api.inTenant { _, connection in
            try connection.query("UPDATE alerts SET opened_at = (SELECT min(opened_at) FROM alerts) WHERE group_id = \(UUID(uuidString: group)!)")
        }
        result = try await walk(api, "/v1/alerts", limit: 1, key: "seq", token: owner.token)
        #expect(result.paged.count == 4 && result.paged == result.whole, "\(result)")
        await api.stop()
    }

    @Test func aCursorThatIsNoNextAndALimitOutOfRangeAre400() async throws {
        let api = try APIFixture()
        let owner = try await api.person(email: "pat@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Oak"], token: owner.token).1["id"] as? String)
        let checkinCursor = "1732363200000000.\(UUID().uuidString.lowercased())"
        for path in ["/v1/groups", "/v1/groups/\(group)/members", "/v1/groups/\(group)/invitations", "/v1/invitations", "/v1/checkins", "/v1/alerts"] {
            // ("AA" is a name holding a NUL; a NUL in the target itself is refused before routing.)
            for cursor in ["garbage", "1.2.3.4", "AA.00000000-0000-0000-0000-000000000000", String(repeating: "A", count: 2000), "...", "0.x.0"] {
                let (status, body) = try await api.call("GET", "\(path)?cursor=\(cursor)", token: owner.token)
                let error = body["error"] as? [String: Any]
                #expect(status == 400 && error?["field"] as? String == "cursor", "\(path) \(cursor.prefix(20)): \(status) \(body)")
            }
            for limit in ["0", "201", "-1", "x"] {
                #expect(try await api.call("GET", "\(path)?limit=\(limit)", token: owner.token).0 == 400, "\(path) limit=\(limit)")
            }
        }
        // A well-formed cursor of another list's shape is refused by a list of three fields.
        #expect(try await api.call("GET", "/v1/alerts?cursor=\(checkinCursor)", token: owner.token).0 == 400)
        // A well-formed cursor past the end is an empty last page.
        let (status, body) = try await api.call("GET", "/v1/checkins?cursor=1.\(UUID().uuidString.lowercased())", token: owner.token)
        #expect(status == 200 && (body["items"] as? [Any])?.isEmpty == true && body["next"] is NSNull)
        await api.stop()
    }
}
