import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct MembershipRoutesTests {
    let api: APIFixture

    init() throws {
        api = try APIFixture()
    }

    struct Person {
        let token: String
        let id: String
    }

    func person(_ name: String) async throws -> Person {
        let (_, body) = try await api.register(["email": "\(name)-\(UUID().uuidString.prefix(6))@example.org", "display_name": name])
        let user = try #require(body["user"] as? [String: Any])
        return Person(token: try #require(body["token"] as? String), id: try #require(user["id"] as? String))
    }

    func join(_ person: Person, _ group: String, role: String = "member") async throws {
        try await api.addMember(person.id, to: group, role: role)
    }

    func eventNames(_ group: String) async throws -> [String] {
        try await api.inTenant { _, connection in
            try GroupEventLog().events(group: UUID(uuidString: group)!, after: 0, limit: 100, on: connection).map(\.event)
        }
    }

    func setUp() async throws -> (owner: Person, admin: Person, member: Person, outsider: Person, group: String) {
        let owner = try await person("Olga"), admin = try await person("Ali"), member = try await person("Mo"), outsider = try await person("Ola")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Birch Close"], token: owner.token).1["id"] as? String)
        try await join(admin, group, role: "admin")
        try await join(member, group)
        return (owner, admin, member, outsider, group)
    }

    @Test func membersAreListedOwnerFirstAndOnlyToMembers() async throws {
        let (owner, admin, member, outsider, group) = try await setUp()
        let (status, body) = try await api.call("GET", "/v1/groups/\(group)/members", token: member.token)
        #expect(status == 200)
        let items = try #require(body["items"] as? [[String: Any]])
        #expect(items.map { $0["user_id"] as? String } == [owner.id, admin.id, member.id])
        #expect(items.map { $0["role"] as? String } == ["owner", "admin", "member"])
        #expect(try await api.call("GET", "/v1/groups/\(group)/members", token: outsider.token).0 == 404)
        await api.test.stop()
        api.pool.close()
    }

    @Test func onlyManagersChangeTheGroupAndOnlyTheOwnerDeletesIt() async throws {
        let (owner, admin, member, outsider, group) = try await setUp()
        #expect(try await api.call("PATCH", "/v1/groups/\(group)", ["name": "X"], token: member.token).0 == 403)
        #expect(try await api.call("PATCH", "/v1/groups/\(group)", ["name": "X"], token: outsider.token).0 == 404)
        let (status, updated) = try await api.call("PATCH", "/v1/groups/\(group)", ["name": "Birch Close Watch"], token: admin.token)
        #expect(status == 200)
        #expect(updated["name"] as? String == "Birch Close Watch")
        #expect(try await eventNames(group).last == "group.updated")
        #expect(try await api.call("DELETE", "/v1/groups/\(group)", token: admin.token).0 == 403)
        #expect(try await api.call("DELETE", "/v1/groups/\(group)", token: owner.token).0 == 204)
        #expect(try await api.call("GET", "/v1/groups/\(group)", token: member.token).0 == 404)
        await api.test.stop()
        api.pool.close()
    }

    @Test func theOwnerChangesRolesButNeverTheirOwnThatWay() async throws {
        let (owner, admin, member, _, group) = try await setUp()
        let (status, promoted) = try await api.call("PATCH", "/v1/groups/\(group)/members/\(member.id)", ["role": "admin"], token: owner.token)
        #expect(status == 200)
        #expect(promoted["role"] as? String == "admin")
        #expect(try await api.call("PATCH", "/v1/groups/\(group)/members/\(member.id)", ["role": "member"], token: admin.token).0 == 403)
        #expect(try await api.call("PATCH", "/v1/groups/\(group)/members/\(owner.id)", ["role": "member"], token: owner.token).0 == 409)
        #expect(try await api.call("PATCH", "/v1/groups/\(group)/members/\(member.id)", ["role": "owner"], token: owner.token).0 == 400)
        #expect(try await api.call("PATCH", "/v1/groups/\(group)/members/\(UUID().uuidString)", ["role": "admin"], token: owner.token).0 == 404)
        #expect(try await eventNames(group) == ["member.joined", "member.role_changed"])
        await api.test.stop()
        api.pool.close()
    }

    @Test func removingAndLeavingFollowTheRules() async throws {
        let (owner, admin, member, _, group) = try await setUp()
        let other = try await person("Pia")
        try await join(other, group)
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/members/\(other.id)", token: member.token).0 == 403)
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/members/\(owner.id)", token: admin.token).0 == 403)
        let (ownerLeaves, refusal) = try await api.call("DELETE", "/v1/groups/\(group)/members/\(owner.id)", token: owner.token)
        #expect(ownerLeaves == 409)
        #expect(((refusal["error"] as? [String: Any])?["message"] as? String)?.contains("transfer ownership") == true)
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/members/\(other.id)", token: admin.token).0 == 204)
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/members/\(member.id)", token: member.token).0 == 204)
        #expect(try await api.call("GET", "/v1/groups/\(group)", token: member.token).0 == 404)
        #expect(try await eventNames(group) == ["member.joined", "member.removed", "member.left"])
        await api.test.stop()
        api.pool.close()
    }

    @Test func ownershipMovesToAMemberAndTheOldOwnerBecomesAdmin() async throws {
        let (owner, _, member, outsider, group) = try await setUp()
        #expect(try await api.call("POST", "/v1/groups/\(group)/owner", ["user_id": outsider.id], token: owner.token).0 == 400)
        #expect(try await api.call("POST", "/v1/groups/\(group)/owner", ["user_id": member.id], token: member.token).0 == 403)
        let (status, body) = try await api.call("POST", "/v1/groups/\(group)/owner", ["user_id": member.id], token: owner.token)
        #expect(status == 200)
        #expect(body["role"] as? String == "admin")
        let roles = try await api.call("GET", "/v1/groups/\(group)/members", token: member.token).1["items"] as? [[String: Any]]
        #expect(roles?.first?["user_id"] as? String == member.id)
        #expect(roles?.first(where: { $0["user_id"] as? String == owner.id })?["role"] as? String == "admin")
        #expect(try await eventNames(group).suffix(2) == ["member.role_changed", "member.role_changed"])
        // The old owner can now leave.
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/members/\(owner.id)", token: owner.token).0 == 204)
        await api.test.stop()
        api.pool.close()
    }
}
