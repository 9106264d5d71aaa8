import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct GroupRoutesTests {
    let accounts: APIFixture

    init() throws {
        accounts = try APIFixture()
    }

    func token(_ email: String, tenant: String? = nil) async throws -> String {
        var body: [String: Any] = ["tenant": tenant ?? accounts.tenant, "email": email, "password": "a long enough password", "display_name": "N"]
        if tenant != nil { body["tenant"] = tenant }
        return try #require(try await accounts.call("POST", "/v1/auth/register", body).1["token"] as? String)
    }

    @Test func aCreatorOwnsTheGroupAndItsFirstEventIsTheirJoining() async throws {
        let kim = try await token("kim@example.org")
        let (status, group) = try await accounts.call("POST", "/v1/groups", ["name": "Elm Street Watch", "description": "Houses 1-40"], token: kim)
        #expect(status == 201)
        #expect(group["role"] as? String == "owner")
        #expect(group["last_seq"] as? Int == 1)
        let id = try #require(group["id"] as? String)

        let (listed, list) = try await accounts.call("GET", "/v1/groups", token: kim)
        #expect(listed == 200)
        let items = try #require(list["items"] as? [[String: Any]])
        #expect(items.count == 1)
        #expect(items.first?["open_alerts"] as? Int == 0)

        let (got, fetched) = try await accounts.call("GET", "/v1/groups/\(id)", token: kim)
        #expect(got == 200)
        #expect(fetched["description"] as? String == "Houses 1-40")

        // The event log holds exactly the owner's joining, with seq 1.
        let groupID = try #require(UUID(uuidString: id))
        let events = try await accounts.inTenant { _, connection in
            try GroupEventLog().events(group: groupID, after: 0, limit: 10, on: connection)
        }
        #expect(events.map(\.seq) == [1])
        #expect(events.first?.event == "member.joined")
        #expect(events.first?.data.contains("\"role\": \"owner\"") == true)
        await accounts.test.stop()
        accounts.pool.close()
    }

    @Test func aGroupIsInvisibleToNonMembersAndOtherTenants() async throws {
        let kim = try await token("kim2@example.org")
        let lou = try await token("lou@example.org")
        let id = try #require(try await accounts.call("POST", "/v1/groups", ["name": "Private"], token: kim).1["id"] as? String)
        let other = "grp-\(UUID().uuidString.prefix(8).lowercased())"
        try await accounts.pool.withConnection { _ = try TenantStore().create(slug: other, name: "Elsewhere", registration: .open, on: $0) }
        let stranger = try await token("kim2@example.org", tenant: other)
        for caller in [lou, stranger] {
            let (status, body) = try await accounts.call("GET", "/v1/groups/\(id)", token: caller)
            #expect(status == 404)
            #expect((body["error"] as? [String: Any])?["message"] as? String == "no such group")
        }
        // Exactly the same answer as for a group that does not exist at all.
        #expect(try await accounts.call("GET", "/v1/groups/\(UUID().uuidString)", token: kim).1["error"] as? [String: String]
                == ["code": "not_found", "message": "no such group"])
        #expect(try await accounts.call("GET", "/v1/groups/not-a-uuid", token: kim).0 == 404)
        #expect(try await accounts.call("GET", "/v1/groups/\(id)").0 == 401)
        await accounts.test.stop()
        accounts.pool.close()
    }

    @Test func concurrentAppendsGiveAGaplessSequence() async throws {
        let kim = try await token("kim3@example.org")
        let created = try #require(try await accounts.call("POST", "/v1/groups", ["name": "Busy"], token: kim).1["id"] as? String)
        let id = try #require(UUID(uuidString: created))
        let slug = accounts.tenant
        let tenant = try await accounts.pool.withConnection { try TenantStore().find(slug: slug, on: $0)!.id }
        let pool = accounts.pool
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await pool.withConnection { connection in
                        try connection.withTenantTransaction(tenant) {
                            _ = try GroupEventLog().append(tenant: tenant, group: id, event: .groupUpdated, actorType: .system, actorID: nil,
                                                           data: RawJSON("{}"), on: $0)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let seqs = try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant) { try GroupEventLog().events(group: id, after: 0, limit: 100, on: $0).map(\.seq) }
        }
        #expect(seqs == Array(1...21))
        await accounts.test.stop()
        pool.close()
    }
}
