import Foundation
import RoostPersistence
@testable import RoostServer
import RoostTestSupport
import Testing

/// A group's area (issue #60): set by its owner and admins, read by every member, the tenant's
/// default where the group has none, and what is no area refused with the field named.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct GroupAreaTests {
    static let operatorToken = "group-area-operator-token-0123456789abcdef"

    @Test func theOwnerSetsTheAreaMembersReadItAndTheTenantsDefaultStandsInWhenThereIsNone() async throws {
        let api = try APIFixture(adminToken: Self.operatorToken)
        let owner = try await api.person(email: "area-owner@example.org")
        let member = try await api.person(email: "area-member@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm Street"], token: owner.token).1["id"] as? String)
        try await api.addMember(member.id, to: group, role: "member")
        let (_, none) = try await api.call("GET", "/v1/groups/\(group)/area", token: member.token)
        #expect(none["area"] is NSNull && none["source"] is NSNull, "\(none)")

        // The operator gives the tenant a default: a circle round the town.
        let town: [String: Any] = ["circle": ["lat": 55.6761, "lon": 12.5683, "radius_m": 5000]]
        #expect(try await api.call("PUT", "/v1/admin/tenants/\(api.tenant)/area", town, token: Self.operatorToken).0 == 200)
        let (_, fallback) = try await api.call("GET", "/v1/groups/\(group)/area", token: member.token)
        #expect(fallback["source"] as? String == "tenant" && (fallback["area"] as? [String: Any])?["circle"] != nil, "\(fallback)")

        // The owner draws the street; the member sees it; the member cannot change it.
        let street: [String: Any] = ["polygon": [[12.568, 55.676], [12.570, 55.676], [12.570, 55.677], [12.568, 55.677], [12.568, 55.676]]]
        let (set, drawn) = try await api.call("PUT", "/v1/groups/\(group)/area", street, token: owner.token)
        #expect(set == 200 && drawn["source"] as? String == "group", "\(drawn)")
        let (_, seen) = try await api.call("GET", "/v1/groups/\(group)/area", token: member.token)
        let ring = try #require((seen["area"] as? [String: Any])?["polygon"] as? [[Double]])
        #expect(ring.count == 4 && ring.first == [12.568, 55.676], "kept without the repeated closing point: \(ring)")
        #expect(try await api.call("PUT", "/v1/groups/\(group)/area", town, token: member.token).0 == 403)
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/area", token: member.token).0 == 403)
        let stranger = try await api.person(email: "area-stranger@example.org")
        #expect(try await api.call("GET", "/v1/groups/\(group)/area", token: stranger.token).0 == 404)

        // Removed, the tenant's default stands in again; the audit log has both changes.
        let (removed, after) = try await api.call("DELETE", "/v1/groups/\(group)/area", token: owner.token)
        #expect(removed == 200 && after["source"] as? String == "tenant", "\(after)")
        let (_, audit) = try await api.call("GET", "/v1/groups/\(group)/audit", token: owner.token)
        let actions = (audit["items"] as? [[String: Any]])?.compactMap { $0["action"] as? String } ?? []
        #expect(actions.filter { $0 == "group.area_changed" }.count == 2, "\(actions)")
        #expect(try await api.call("DELETE", "/v1/admin/tenants/\(api.tenant)/area", token: Self.operatorToken).0 == 204)
        let (_, gone) = try await api.call("GET", "/v1/admin/tenants/\(api.tenant)/area", token: Self.operatorToken)
        #expect(gone["default_area"] is NSNull)
        #expect(try await api.call("PUT", "/v1/admin/tenants/no-such-town/area", town, token: Self.operatorToken).0 == 404)
        await api.stop()
    }

    @Test func whatIsNoAreaIsRefusedNamingTheField() async throws {
        let api = try APIFixture()
        let owner = try await api.person(email: "area-bad@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Oak Lane"], token: owner.token).1["id"] as? String)
        func refused(_ body: [String: Any]) async throws -> (Int, String?) {
            let (status, answer) = try await api.call("PUT", "/v1/groups/\(group)/area", body, token: owner.token)
            return (status, (answer["error"] as? [String: Any])?["field"] as? String)
        }
        let long = (0..<501).map { index -> [Double] in
            let angle = Double(index) / 501 * 2 * .pi
            return [12.5 + 0.01 * cos(angle), 55.6 + 0.01 * sin(angle)]
        }
        #expect(try await refused(["polygon": long]) == (400, "polygon"), "501 points")
        #expect(try await refused(["polygon": [[0, 0], [1, 1]]]) == (400, "polygon"), "two points")
        #expect(try await refused(["polygon": [[0, 0], [1, 91], [2, 0]]]) == (400, "polygon.1.lat"))
        #expect(try await refused(["polygon": [[0, 0, 0], [1, 1], [2, 0]]]) == (400, "polygon"))
        #expect(try await refused(["circle": ["lat": 55.6, "lon": 12.5, "radius_m": 10]]) == (400, "circle.radius_m"))
        #expect(try await refused(["circle": ["lat": 55.6, "lon": 200, "radius_m": 500]]) == (400, "circle.lon"))
        #expect(try await refused([:]) == (400, "polygon"))
        #expect(try await refused(["polygon": [[0, 0], [1, 0], [1, 1]], "circle": ["lat": 0, "lon": 0, "radius_m": 500]]) == (400, "polygon"))
        #expect(try await refused(["square": 1]) == (400, "square"))
        // A polygon of 100,000 points is refused by its size before it is read.
        let huge = "{\"polygon\":[" + Array(repeating: "[12.5,55.6]", count: 100_000).joined(separator: ",") + "]}"
        let client = try TestClient(port: api.test.port)
        client.send("PUT /v1/groups/\(group)/area HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(owner.token)\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(huge.utf8.count)\r\n\r\n" + huge)
        #expect(await client.readResponse()?.status == 413)
        let (_, kept) = try await api.call("GET", "/v1/groups/\(group)/area", token: owner.token)
        #expect(kept["area"] is NSNull, "nothing refused was kept")
        await api.stop()
    }
}
