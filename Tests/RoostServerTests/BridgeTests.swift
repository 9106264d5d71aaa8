import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Testing

/// Bridges over real sockets and the real database: keys, dedup, signing, rate limits.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct BridgeTests {
    struct Setup {
        let api: APIFixture
        let owner: String
        let group: String
    }

    func setup() async throws -> Setup {
        let api = try APIFixture()
        let (_, body) = try await api.register(["email": "owner-\(UUID().uuidString.prefix(6))@example.org", "display_name": "Owner"])
        let owner = try #require(body["token"] as? String)
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Alarm street"], token: owner).1["id"] as? String)
        return Setup(api: api, owner: owner, group: group)
    }

    func bridge(_ setup: Setup, _ fields: [String: Any] = [:]) async throws -> (key: String, secret: String?, id: String) {
        var body: [String: Any] = ["name": "Hallway panel"]
        body.merge(fields) { $1 }
        let (status, created) = try await setup.api.call("POST", "/v1/groups/\(setup.group)/bridges", body, token: setup.owner)
        #expect(status == 201, "\(created)")
        return (try #require(created["key"] as? String), created["secret"] as? String,
                try #require((created["bridge"] as? [String: Any])?["id"] as? String))
    }

    static func trigger(_ key: String = "front-door", summary: String = "Front door alarm") -> [String: Any] {
        ["action": "trigger", "dedup_key": key, "summary": summary, "severity": "red"]
    }

    @Test func aTriggerOpensOneAlertRepeatsCountAndResolveClosesIt() async throws {
        let setup = try await setup()
        let api = setup.api
        let (key, secret, id) = try await bridge(setup)
        #expect(key.hasPrefix("rbk_") && secret == nil)
        var trigger = Self.trigger()
        trigger["details"] = ["zone": 3, "panel": "Ajax"]
        let (created, alert) = try await api.call("POST", "/v1/bridge/alerts", trigger, token: key)
        #expect(created == 201)
        #expect((alert["author"] as? [String: Any])?["type"] as? String == "bridge")
        #expect((alert["author"] as? [String: Any])?["display_name"] as? String == "Hallway panel")
        let state = try #require(alert["alert"] as? [String: Any])
        #expect(state["dedup_key"] as? String == "front-door" && (state["details"] as? [String: Any])?["zone"] as? Int == 3)
        let (repeated, again) = try await api.call("POST", "/v1/bridge/alerts", Self.trigger(), token: key)
        #expect(repeated == 200 && again["seq"] as? Int == alert["seq"] as? Int)
        #expect((again["alert"] as? [String: Any])?["repeat_count"] as? Int == 1)
        let (resolved, closed) = try await api.call("POST", "/v1/bridge/alerts", ["action": "resolve", "dedup_key": "front-door"], token: key)
        let closedState = try #require(closed["alert"] as? [String: Any])
        #expect(resolved == 200 && closedState["status"] as? String == "closed")
        #expect((closedState["closed_by"] as? [String: Any])?["type"] as? String == "bridge" && (closedState["closed_by"] as? [String: Any])?["id"] as? String == id)
        #expect(try await api.call("POST", "/v1/bridge/alerts", ["action": "resolve", "dedup_key": "front-door"], token: key).0 == 404)
        // After a close, the same dedup_key opens a new alert.
        let (reopened, fresh) = try await api.call("POST", "/v1/bridge/alerts", Self.trigger(), token: key)
        #expect(reopened == 201 && fresh["seq"] as? Int != alert["seq"] as? Int)
        let events = try await api.call("GET", "/v1/groups/\(setup.group)/events?after=1", token: setup.owner).1["items"] as? [[String: Any]]
        #expect(events?.compactMap { $0["event"] as? String } == ["message.created", "alert.repeated", "alert.closed", "message.created"])
        // The list shows bridges but never their keys.
        let listed = try #require(try await api.call("GET", "/v1/groups/\(setup.group)/bridges", token: setup.owner).1["items"] as? [[String: Any]])
        #expect(listed.count == 1 && listed[0]["key"] == nil && listed[0]["last_seen_at"] is String)
        await api.stop()
    }

    @Test func twentyConcurrentIdenticalTriggersMakeOneAlert() async throws {
        let setup = try await setup()
        let (key, _, _) = try await bridge(setup, ["burst": 50])
        let port = setup.api.test.port
        let statuses = try await withThrowingTaskGroup(of: (Int, Int?).self) { tasks in
            for _ in 0..<20 {
                tasks.addTask {
                    let (status, body) = try await APIClient(port: port).call("POST", "/v1/bridge/alerts", Self.trigger("siren"), token: key)
                    return (status, body["seq"] as? Int)
                }
            }
            return try await tasks.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.filter { $0.0 == 201 }.count == 1, "\(statuses)")
        #expect(statuses.filter { $0.0 == 200 }.count == 19, "\(statuses)")
        #expect(Set(statuses.map(\.1)).count == 1)
        let alerts = try #require(try await setup.api.call("GET", "/v1/groups/\(setup.group)/alerts", token: setup.owner).1["items"] as? [[String: Any]])
        #expect(alerts.count == 1 && (alerts[0]["alert"] as? [String: Any])?["repeat_count"] as? Int == 19)
        await setup.api.stop()
    }

    @Test func keysAndTokensStayInTheirLanesAndRevocationIsImmediate() async throws {
        let setup = try await setup()
        let api = setup.api
        let (key, _, id) = try await bridge(setup)
        #expect(try await api.call("POST", "/v1/bridge/alerts", Self.trigger(), token: setup.owner).0 == 401)
        #expect(try await api.call("GET", "/v1/me", token: key).0 == 401)
        #expect(try await api.call("GET", "/v1/groups/\(setup.group)", token: key).0 == 401)
        #expect(try await api.call("POST", "/v1/bridge/heartbeat", token: key).0 == 204)
        #expect(try await api.call("DELETE", "/v1/groups/\(setup.group)/bridges/\(id)", token: setup.owner).0 == 204)
        #expect(try await api.call("POST", "/v1/bridge/alerts", Self.trigger(), token: key).0 == 401)
        #expect(try await api.call("POST", "/v1/bridge/heartbeat", token: key).0 == 401)
        #expect(try await api.call("DELETE", "/v1/groups/\(setup.group)/bridges/\(id)", token: setup.owner).0 == 404)
        // Only managers manage bridges; outsiders see no group.
        let (_, member) = try await api.register(["email": "m-\(UUID().uuidString.prefix(6))@example.org"])
        let memberToken = try #require(member["token"] as? String)
        try await api.addMember(try #require((member["user"] as? [String: Any])?["id"] as? String), to: setup.group, role: "member")
        #expect(try await api.call("POST", "/v1/groups/\(setup.group)/bridges", ["name": "x"], token: memberToken).0 == 403)
        #expect(try await api.call("GET", "/v1/groups/\(setup.group)/bridges", token: memberToken).0 == 403)
        let (_, outsider) = try await api.register(["email": "o-\(UUID().uuidString.prefix(6))@example.org"])
        #expect(try await api.call("GET", "/v1/groups/\(setup.group)/bridges", token: outsider["token"] as? String).0 == 404)
        await api.stop()
    }

    @Test func signedBridgesNeedAFreshValidSignatureOnce() async throws {
        let setup = try await setup()
        let (key, secret, _) = try await bridge(setup, ["signing": true])
        let signingSecret = try #require(secret)
        let client = try TestClient(port: setup.api.test.port)
        func send(_ body: String, timestamp: Int = Int(Date().timeIntervalSince1970), secret: String? = nil, signBody: String? = nil) async -> Int {
            let mac = Secrets.hmacSHA256(key: Array((secret ?? signingSecret).utf8), message: Array("\(timestamp).\(signBody ?? body)".utf8))
            client.send("POST /v1/bridge/alerts HTTP/1.1\r\nAuthorization: Bearer \(key)\r\nX-Roost-Timestamp: \(timestamp)\r\n"
                        + "X-Roost-Signature: sha256=\(Digest.hex(mac))\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            return await client.readResponse()?.status ?? 0
        }
        let body = #"{"action":"trigger","dedup_key":"cam-1","summary":"Person at the gate"}"#
        let now = Int(Date().timeIntervalSince1970)
        #expect(await send(body, timestamp: now) == 201)
        #expect(await send(body, timestamp: now) == 409, "a replay")
        #expect(await send(body, signBody: body.replacingOccurrences(of: "gate", with: "door")) == 401, "tampered")
        #expect(await send(body, secret: "rbs_wrong") == 401, "wrong secret")
        #expect(await send(body, timestamp: now - 400) == 401, "stale")
        client.send("POST /v1/bridge/alerts HTTP/1.1\r\nAuthorization: Bearer \(key)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        #expect(await client.readResponse()?.status == 401, "unsigned")
        #expect(await send(body, timestamp: now + 1) == 200, "a fresh signature is a repeat, not a replay")
        await setup.api.stop()
    }

    @Test func aBridgeThatMissesTwoBeatsIsAnnouncedOfflineOnceThenOnlineWhenItReturns() async throws {
        let api = try APIFixture(stream: true)
        let email = "keeper-\(UUID().uuidString.prefix(6).lowercased())@example.org"
        let (_, registered) = try await api.register(["email": email, "display_name": "Keeper"])
        let owner = try #require(registered["token"] as? String)
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Watched"], token: owner).1["id"] as? String)
        try await api.inTenant { _, connection in try connection.query("UPDATE users SET email_verified = true WHERE email = \(email)") }
        #expect(try await api.call("POST", "/v1/groups/\(group)/bridges", ["name": "Gate camera", "heartbeat_s": 59], token: owner).0 == 400)
        let (_, created) = try await api.call("POST", "/v1/groups/\(group)/bridges", ["name": "Gate camera", "heartbeat_s": 60], token: owner)
        let key = try #require(created["key"] as? String)
        let id = try #require((created["bridge"] as? [String: Any])?["id"] as? String)
        let stream = try await WebSocketTestClient.connect(port: api.test.port, path: "/v1/stream", token: owner)
        #expect(await stream.receiveJSON()?["type"] as? String == "ready")
        stream.sendText(#"{"type":"resume","cursors":{}}"#)
        #expect(await stream.receiveJSON()?["type"] as? String == "resumed")

        // Two beats pass in silence (the clock moved by hand): a sweep announces it, once. (The
        // sweep may be another node's: end-to-end tests run nodes on the same database.)
        try await api.pool.withConnection { connection in
            try connection.query("UPDATE bridge_watch SET silent_after = now() - interval '1 second' WHERE bridge_id = \(UUID(uuidString: id)!)")
        }
        _ = try await BridgeNotices.sweep(pool: api.pool, runner: JobRunner(metrics: JobMetrics(), log: Log(level: .error)))
        let offline = try #require(await stream.receiveJSON())
        #expect(offline["type"] as? String == "notice" && offline["event"] as? String == "bridge.offline")
        #expect((offline["data"] as? [String: Any])?["bridge_id"] as? String == id)
        _ = try await BridgeNotices.sweep(pool: api.pool, runner: JobRunner(metrics: JobMetrics(), log: Log(level: .error)))
        // It beats again: back online, announced once.
        #expect(try await api.call("POST", "/v1/bridge/heartbeat", token: key).0 == 204)
        let online = try #require(await stream.receiveJSON())
        #expect(online["event"] as? String == "bridge.online")
        #expect(try await api.call("POST", "/v1/bridge/heartbeat", token: key).0 == 204)
        let mails = try await api.inTenant { _, connection in
            try connection.query("SELECT template FROM outbox WHERE recipient = \(email) ORDER BY created_at").rows.map { try $0.decode(String.self, "template") }
        }
        #expect(mails == ["bridge_offline", "bridge_digest"], "one bridge email a manager an hour, the rest in a digest; the stream had both")
        let digest = try await api.inTenant { _, connection in
            try connection.query("""
                SELECT o.data->>'count' AS count, o.data->>'lines' AS lines, j.next_attempt_at > now() + interval '1 second' AS later
                FROM outbox o JOIN outbox_jobs j ON j.outbox_id = o.id WHERE o.recipient = \(email) AND o.template = 'bridge_digest'
                """).rows.map { (try $0.decode(String.self, "count"), try $0.decode(String.self, "lines"), try $0.decode(Bool.self, "later")) }
        }
        #expect(digest.count == 1 && digest[0].0 == "1" && digest[0].1 == "Gate camera (Watched) is back" && digest[0].2, "\(digest)")
        await api.stop()
    }

    @Test func aBridgePastItsRateLimitWaitsAndBadBodiesNameTheirField() async throws {
        let setup = try await setup()
        let api = setup.api
        let (key, _, _) = try await bridge(setup, ["burst": 3, "rate_per_minute": 1])
        for _ in 0..<3 { #expect(try await api.call("POST", "/v1/bridge/heartbeat", token: key).0 == 204) }
        let (limited, body) = try await api.call("POST", "/v1/bridge/alerts", Self.trigger(), token: key)
        #expect(limited == 429 && (body["error"] as? [String: Any])?["code"] as? String == "rate_limited")

        let (other, _, _) = try await bridge(setup, ["name": "Garage camera", "burst": 100])
        let cases: [([String: Any], Int, String)] = [
            (["action": "explode", "dedup_key": "k"], 400, "action"), (["action": "trigger", "summary": "x"], 400, "dedup_key"),
            (["action": "trigger", "dedup_key": "k"], 400, "summary"), (["action": "trigger", "dedup_key": "", "summary": "x"], 400, "dedup_key"),
            (Self.trigger().merging(["severity": "purple"]) { $1 }, 400, "severity"),
            (Self.trigger().merging(["details": "text"]) { $1 }, 400, "details"),
            (Self.trigger().merging(["details": ["blob": String(repeating: "x", count: 20_000)]]) { $1 }, 413, "details"),
            (Self.trigger().merging(["occurred_at": "yesterday"]) { $1 }, 400, "occurred_at"),
            (Self.trigger().merging(["surprise": 1]) { $1 }, 400, "surprise"),
        ]
        for (body, status, field) in cases {
            let (got, answer) = try await api.call("POST", "/v1/bridge/alerts", body, token: other)
            #expect(got == status && (answer["error"] as? [String: Any])?["field"] as? String == field, "\(body.keys.sorted()) → \(got) \(answer)")
        }
        await api.stop()
    }
}
