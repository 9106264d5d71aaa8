import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// Hostile input on every endpoint of the account, group, invitation, message, check-in and bridge-management sections: each answer is a client error in the API's
/// shape (or a success that stored the value as written), never a 5xx, and the server keeps
/// serving afterwards.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct BadInputTests {
    /// Made on demand: `Any` values are not Sendable, so no shared static holds them.
    static var hostileValues: [Any] { [
        123, true, NSNull(), ["nested": "object"], [1, 2],
        String(repeating: "x", count: 10_000), "bell\u{7}\u{0}", "'; DROP TABLE users; --", "\"quoted\" \\ back",
        "😀🚨", "", " ",
    ] }

    @Test func everyFieldOfEveryEndpointSurvivesHostileValues() async throws {
        let api = try APIFixture()
        let (_, owner) = try await api.register(["email": "owner-\(UUID().uuidString.prefix(6))@example.org"])
        let token = try #require(owner["token"] as? String)
        let ownerID = try #require((owner["user"] as? [String: Any])?["id"] as? String)
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Hostile"], token: token).1["id"] as? String)

        let endpoints: [(String, String, [String: Any], Bool)] = [
            ("POST", "/v1/auth/register", ["tenant": api.tenant, "email": "x@example.org", "password": "a long enough password", "display_name": "X"], false),
            ("POST", "/v1/auth/login", ["tenant": api.tenant, "email": "x@example.org", "password": "a long enough password"], false),
            ("PATCH", "/v1/me", ["display_name": "Y", "home": ["address": "1 Road"]], true),
            ("POST", "/v1/me/devices", ["platform": "fcm", "token": "t"], true),
            ("POST", "/v1/groups", ["name": "G", "description": "d"], true),
            ("PATCH", "/v1/groups/\(group)", ["name": "G2"], true),
            ("PATCH", "/v1/groups/\(group)/members/\(ownerID)", ["role": "admin"], true),
            ("POST", "/v1/groups/\(group)/owner", ["user_id": ownerID], true),
            ("POST", "/v1/groups/\(group)/invitations", ["email": "invitee@example.org", "role": "member"], true),
            ("POST", "/v1/groups/\(group)/invitations", ["phone": "+4512345678"], true),
            ("POST", "/v1/invitations/accept", ["token": "riv_AAAA"], true),
            ("POST", "/v1/invitations/accept", ["invitation_id": UUID().uuidString], true),
            ("POST", "/v1/me/contacts/verify", ["channel": "email"], true),
            ("POST", "/v1/me/contacts/confirm", ["channel": "email", "code": "123456"], true),
            ("POST", "/v1/groups/\(group)/messages", ["client_msg_id": "c", "text": "hi", "kind": "alert", "severity": "red",
                                                     "location": ["lat": 1, "lon": 2], "reply_to": 1, "template": "alarm"], true),
            ("POST", "/v1/groups/\(group)/alerts/1/ack", ["response": "seen", "note": "n"], true),
            ("POST", "/v1/groups/\(group)/alerts/1/close", ["resolution": "r"], true),
            ("PUT", "/v1/groups/\(group)/templates", ["templates": [["key": "k", "text": "t", "kind": "chat"]]], true),
            ("POST", "/v1/checkins", ["group_id": group, "due_in_s": 600, "note": "n", "location": ["lat": 1, "lon": 2]], true),
            ("POST", "/v1/groups/\(group)/bridges", ["name": "Panel", "signing": true, "heartbeat_s": 60, "rate_per_minute": 60, "burst": 20], true),
        ]
        var outcomes: [Int: Int] = [:]
        for (method, path, valid, authenticated) in endpoints {
            var variants: [[String: Any]] = [valid.merging(["surprise": "field"]) { $1 }]
            for field in valid.keys {
                variants.append(valid.filter { $0.key != field })
                for value in Self.hostileValues { variants.append(valid.merging([field: value]) { $1 }) }
            }
            for body in variants {
                let (status, response) = try await api.call(method, path, body, token: authenticated ? token : nil)
                outcomes[status, default: 0] += 1
                #expect(status < 500, "\(method) \(path) \(body.keys.sorted()) → \(status)")
                if status >= 400 {
                    let error = response["error"] as? [String: Any]
                    #expect(error?["code"] is String && error?["message"] is String, "\(method) \(path) → \(response)")
                }
            }
        }
        // Malformed and foreign ids in paths are simply not found.
        for path in ["/v1/groups/not-a-uuid", "/v1/groups/\(group)%00", "/v1/groups/\(UUID().uuidString)/members",
                     "/v1/me/devices/'; DROP TABLE devices; --", "/v1/groups/\(group)/members/12345",
                     "/v1/groups/\(group)/invitations/%27%3B--", "/v1/invitations/not-a-uuid/decline",
                     "/v1/groups/\(group)/messages?before=%27%3B--", "/v1/groups/\(group)/events?after=abc", "/v1/groups/\(group)/alerts?status=%00",
                     "/v1/groups/\(group)/alerts/99999999999999999999/ack", "/v1/groups/\(group)/messages?limit=100000",
                     "/v1/checkins?status=%27%3B--", "/v1/checkins/not-a-uuid/complete"] {
            let status = try await api.call("GET", path, token: token).0
            #expect(status == 404 || status == 400 || status == 405, "\(path) → \(status)")
        }
        // Still serving, and the owner's session is intact.
        #expect(try await api.call("GET", "/v1/me", token: token).0 == 200)
        #expect(outcomes.keys.allSatisfy { $0 < 500 })
        await api.test.stop()
        api.pool.close()
    }
}
