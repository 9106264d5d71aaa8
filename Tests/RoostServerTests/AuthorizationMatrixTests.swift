import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// Every group endpoint so far × every kind of caller → the status API.md prescribes. A caller
/// who may not see the group gets exactly the answer for a group that does not exist.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct AuthorizationMatrixTests {
    enum Caller: CaseIterable {
        case owner, admin, member, sameTenantOutsider, otherTenant, noToken, badToken
    }

    /// Expected status per caller for one endpoint; the target member (where one is needed) is `member`.
    static var matrix: [(String, String, [String: Any]?, [Caller: Int])] { [
        ("GET", "/v1/groups/{g}", nil,
         [.owner: 200, .admin: 200, .member: 200, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("GET", "/v1/groups/{g}/members", nil,
         [.owner: 200, .admin: 200, .member: 200, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("PATCH", "/v1/groups/{g}", ["name": "Renamed"],
         [.owner: 200, .admin: 200, .member: 403, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("DELETE", "/v1/groups/{g}", nil,
         [.owner: 204, .admin: 403, .member: 403, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("PATCH", "/v1/groups/{g}/members/{m}", ["role": "admin"],
         [.owner: 200, .admin: 403, .member: 403, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("DELETE", "/v1/groups/{g}/members/{m}", nil,
         [.owner: 204, .admin: 204, .member: 204, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("POST", "/v1/groups/{g}/owner", ["user_id": "{m}"],
         [.owner: 200, .admin: 403, .member: 403, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
    ] }

    @Test func everyCallerGetsThePrescribedStatus() async throws {
        let api = try APIFixture()
        let other = "authz-\(UUID().uuidString.prefix(8).lowercased())"
        try await api.pool.withConnection { _ = try TenantStore().create(slug: other, name: "Elsewhere", registration: .open, on: $0) }

        var tokens: [Caller: String?] = [.noToken: nil, .badToken: "rst_" + String(repeating: "A", count: 64)]
        var ids: [Caller: String] = [:]
        for caller in [Caller.owner, .admin, .member, .sameTenantOutsider, .otherTenant] {
            let tenant = caller == .otherTenant ? other : api.tenant
            let (_, body) = try await api.call("POST", "/v1/auth/register", [
                "tenant": tenant, "email": "\(caller)@example.org", "password": "a long enough password", "display_name": "\(caller)",
            ])
            tokens[caller] = try #require(body["token"] as? String)
            ids[caller] = try #require((body["user"] as? [String: Any])?["id"] as? String)
        }

        for (method, template, body, expected) in Self.matrix {
            for caller in Caller.allCases {
                // A fresh group per row and caller: deletions and transfers cannot leak into the next row.
                let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Matrix"], token: tokens[.owner]!).1["id"] as? String)
                try await api.addMember(ids[.admin]!, to: group, role: "admin")
                try await api.addMember(ids[.member]!, to: group, role: "member")
                // Leaving is the member's own right: as member, the target is the member themself.
                let path = template.replacingOccurrences(of: "{g}", with: group).replacingOccurrences(of: "{m}", with: ids[.member]!)
                let resolved = body.map { $0.mapValues { ($0 as? String) == "{m}" ? ids[.member]! : $0 } }
                let (status, response) = try await api.call(method, path, resolved, token: tokens[caller]!)
                #expect(status == expected[caller], "\(method) \(template) as \(caller): \(status) \(response)")
                if status == 404 {
                    #expect((response["error"] as? [String: Any])?["message"] as? String == "no such group",
                            "\(method) \(template) as \(caller) revealed more than a missing group would")
                }
            }
        }
        await api.test.stop()
        api.pool.close()
    }
}
