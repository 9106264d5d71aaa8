import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// Every endpoint of API.md's Accounts, Groups and members, Invitations, Messages and alerts, Check-ins and Bridges sections × every
/// kind of caller → the status API.md prescribes. A caller who may not see a group, an
/// invitation or a device gets exactly the answer for one that does not exist.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct AuthorizationMatrixTests {
    enum Caller: CaseIterable {
        case owner, admin, member, sameTenantOutsider, otherTenant, noToken, badToken
    }

    /// Expected status per caller for one endpoint. Placeholders: `{g}` a fresh group of the
    /// owner's, `{m}` its plain member, `{i}` a fresh invitation of that group (to an address
    /// none of the callers has), `{d}` a device of the owner's.
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
        ("POST", "/v1/groups/{g}/invitations", ["email": "newcomer@example.org"],
         [.owner: 201, .admin: 201, .member: 403, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("GET", "/v1/groups/{g}/invitations", nil,
         [.owner: 200, .admin: 200, .member: 403, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("DELETE", "/v1/groups/{g}/invitations/{i}", nil,
         [.owner: 204, .admin: 204, .member: 403, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        // Addressed to none of the callers: by id, nobody can tell it exists.
        ("POST", "/v1/invitations/accept", ["invitation_id": "{i}"],
         [.owner: 404, .admin: 404, .member: 404, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("POST", "/v1/invitations/{i}/decline", nil,
         [.owner: 404, .admin: 404, .member: 404, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("GET", "/v1/invitations", nil,
         [.owner: 200, .admin: 200, .member: 200, .sameTenantOutsider: 200, .otherTenant: 200, .noToken: 401, .badToken: 401]),
        ("GET", "/v1/me", nil,
         [.owner: 200, .admin: 200, .member: 200, .sameTenantOutsider: 200, .otherTenant: 200, .noToken: 401, .badToken: 401]),
        ("PATCH", "/v1/me", ["display_name": "Renamed"],
         [.owner: 200, .admin: 200, .member: 200, .sameTenantOutsider: 200, .otherTenant: 200, .noToken: 401, .badToken: 401]),
        ("GET", "/v1/me/devices", nil,
         [.owner: 200, .admin: 200, .member: 200, .sameTenantOutsider: 200, .otherTenant: 200, .noToken: 401, .badToken: 401]),
        ("POST", "/v1/me/devices", ["platform": "unifiedpush", "token": "matrix"],
         [.owner: 201, .admin: 201, .member: 201, .sameTenantOutsider: 201, .otherTenant: 201, .noToken: 401, .badToken: 401]),
        ("DELETE", "/v1/me/devices/{d}", nil,
         [.owner: 204, .admin: 404, .member: 404, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("POST", "/v1/me/contacts/verify", ["channel": "email"],
         [.owner: 202, .admin: 202, .member: 202, .sameTenantOutsider: 202, .otherTenant: 202, .noToken: 401, .badToken: 401]),
        ("POST", "/v1/me/contacts/confirm", ["channel": "email", "code": "12345x"],
         [.owner: 400, .admin: 400, .member: 400, .sameTenantOutsider: 400, .otherTenant: 400, .noToken: 401, .badToken: 401]),
        ("POST", "/v1/groups/{g}/messages", ["client_msg_id": "m1", "text": "Gate left open", "kind": "chat"],
         [.owner: 201, .admin: 201, .member: 201, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("GET", "/v1/groups/{g}/messages", nil,
         [.owner: 200, .admin: 200, .member: 200, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("GET", "/v1/groups/{g}/events?after=0", nil,
         [.owner: 200, .admin: 200, .member: 200, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("GET", "/v1/groups/{g}/alerts?status=open", nil,
         [.owner: 200, .admin: 200, .member: 200, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("GET", "/v1/alerts?status=open", nil,
         [.owner: 200, .admin: 200, .member: 200, .sameTenantOutsider: 200, .otherTenant: 200, .noToken: 401, .badToken: 401]),
        ("POST", "/v1/groups/{g}/alerts/{s}/ack", ["response": "on_my_way"],
         [.owner: 200, .admin: 200, .member: 200, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        // The alert is the owner's: its author and the managers close and reopen it.
        ("POST", "/v1/groups/{g}/alerts/{s}/close", ["resolution": "Neighbour's alarm, false"],
         [.owner: 200, .admin: 200, .member: 403, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("POST", "/v1/groups/{g}/alerts/{c}/reopen", nil,
         [.owner: 200, .admin: 200, .member: 403, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("DELETE", "/v1/groups/{g}/messages/{s}", nil,
         [.owner: 204, .admin: 204, .member: 403, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("GET", "/v1/groups/{g}/templates", nil,
         [.owner: 200, .admin: 200, .member: 200, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("PUT", "/v1/groups/{g}/templates", ["templates": [["key": "fire", "text": "Fire!", "kind": "alert", "severity": "red"]]],
         [.owner: 200, .admin: 200, .member: 403, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("POST", "/v1/groups/{g}/bridges", ["name": "Panel"],
         [.owner: 201, .admin: 201, .member: 403, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("GET", "/v1/groups/{g}/bridges", nil,
         [.owner: 200, .admin: 200, .member: 403, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("DELETE", "/v1/groups/{g}/bridges/{b}", nil,
         [.owner: 204, .admin: 204, .member: 403, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        // A user's token never works where a bridge key is expected.
        ("POST", "/v1/bridge/alerts", ["action": "trigger", "dedup_key": "k", "summary": "s"],
         [.owner: 401, .admin: 401, .member: 401, .sameTenantOutsider: 401, .otherTenant: 401, .noToken: 401, .badToken: 401]),
        ("POST", "/v1/checkins", ["group_id": "{g}", "due_in_s": 600],
         [.owner: 201, .admin: 201, .member: 201, .sameTenantOutsider: 404, .otherTenant: 404, .noToken: 401, .badToken: 401]),
        ("GET", "/v1/checkins", nil,
         [.owner: 200, .admin: 200, .member: 200, .sameTenantOutsider: 200, .otherTenant: 200, .noToken: 401, .badToken: 401]),
    ] }

    /// Endpoints that end the caller's session or account: run last, each caller on a fresh session.
    /// (The body is a password: `DELETE /v1/me` needs one.)
    static let sessionEnders: [(String, String, String?, Int)] = [
        ("POST", "/v1/auth/logout", nil, 204), ("POST", "/v1/auth/logout-all", nil, 204),
        ("DELETE", "/v1/me", "a long enough password", 204),
    ]

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

        var invitee = 0
        for (method, template, body, expected) in Self.matrix {
            for caller in Caller.allCases {
                // A fresh group, invitation and device per row and caller: deletions and transfers
                // cannot leak into the next row.
                let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Matrix"], token: tokens[.owner]!).1["id"] as? String)
                try await api.addMember(ids[.admin]!, to: group, role: "admin")
                try await api.addMember(ids[.member]!, to: group, role: "member")
                invitee += 1
                var invitation = "", device = ""
                if template.contains("{i}") || body?.values.contains(where: { $0 as? String == "{i}" }) == true {
                    invitation = try #require(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "invitee\(invitee)@example.org"],
                                                                 token: tokens[.owner]!).1["id"] as? String)
                }
                if template.contains("{d}") {
                    device = try #require(try await api.call("POST", "/v1/me/devices", ["platform": "fcm", "token": "matrix-\(invitee)"],
                                                             token: tokens[.owner]!).1["id"] as? String)
                }
                var alert = "", closed = ""
                if template.contains("{s}") || template.contains("{c}") {
                    let (_, posted) = try await api.call("POST", "/v1/groups/\(group)/messages",
                                                         ["client_msg_id": "a\(invitee)", "text": "Smoke alarm", "kind": "alert"], token: tokens[.owner]!)
                    alert = String(try #require(posted["seq"] as? Int))
                    closed = alert
                    if template.contains("{c}") {
                        #expect(try await api.call("POST", "/v1/groups/\(group)/alerts/\(alert)/close", token: tokens[.owner]!).0 == 200)
                    }
                }
                var bridge = ""
                if template.contains("{b}") {
                    bridge = try #require((try await api.call("POST", "/v1/groups/\(group)/bridges", ["name": "Matrix"], token: tokens[.owner]!)
                        .1["bridge"] as? [String: Any])?["id"] as? String)
                }
                // Leaving is the member's own right: as member, the target is the member themself.
                let placeholders = ["{g}": group, "{m}": ids[.member]!, "{i}": invitation, "{d}": device, "{s}": alert, "{c}": closed,
                                    "{b}": bridge]
                let path = placeholders.reduce(template) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
                let resolved = body.map { $0.mapValues { value in (value as? String).flatMap { placeholders[$0] } ?? value } }
                let (status, response) = try await api.call(method, path, resolved, token: tokens[caller]!)
                #expect(status == expected[caller], "\(method) \(template) as \(caller): \(status) \(response)")
                if status == 404 {
                    let message = template.hasPrefix("/v1/groups/") || template == "/v1/checkins" ? "no such group"
                        : template.hasPrefix("/v1/invitations") ? "no such invitation" : "no such device"
                    #expect((response["error"] as? [String: Any])?["message"] as? String == message,
                            "\(method) \(template) as \(caller) revealed more than a missing resource would: \(response)")
                }
            }
        }
        for (method, path, password, expected) in Self.sessionEnders {
            let body: [String: Any]? = password.map { ["password": $0] }
            for caller in Caller.allCases {
                var token = tokens[caller]!
                if [.owner, .admin, .member, .sameTenantOutsider, .otherTenant].contains(caller) {
                    let (_, session) = try await api.call("POST", "/v1/auth/login", [
                        "tenant": caller == .otherTenant ? other : api.tenant, "email": "\(caller)@example.org", "password": "a long enough password",
                    ])
                    token = try #require(session["token"] as? String)
                }
                let status = try await api.call(method, path, body, token: token).0
                #expect(status == (token == nil || caller == .badToken ? 401 : expected), "\(method) \(path) as \(caller)")
                if status == expected { #expect(try await api.call("GET", "/v1/me", token: token).0 == 401) }
            }
        }
        await api.test.stop()
        api.pool.close()
    }
}
