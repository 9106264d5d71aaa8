import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Testing

/// Web Push straight to a push service (scripts/lib/push_service.py: HTTPS on a test CA) that
/// decrypts every payload with http_ece and checks every VAPID token with the cryptography
/// package: nothing of Roost's judges Roost's pushes.
@Suite(.enabled(if: TestDatabase.isConfigured && SpecTool.python != nil, "needs TEST_DATABASE_URL and ROOST_TEST_PYTHON (scripts/test sets both)"),
       .serialized)
struct WebPushDeliveryTests {
    final class Setup: @unchecked Sendable {
        let service: ScriptService
        let ca: String
        let subscriptions: [String: [String: Any]]
        let database: String
        let api: APIFixture
        let push: PushSettings

        init() async throws {
            service = try await ScriptService("push_service.py", readyKey: "subscriptions")
            ca = try #require(service.ready["ca"] as? String)
            subscriptions = try #require(service.ready["subscriptions"] as? [String: [String: Any]])
            push = WebPushDeliveryTests.localPush()
            database = try TestDatabase.makeScratch()
            api = try APIFixture(database: database, push: push)
        }

        func worker() throws -> OutboxWorker {
            try WebPushDeliveryTests.worker(api.pool, push: push, tls: TLSClientContext(extraCAFile: ca))
        }

        func finish() async {
            await api.stop()
            await service.stop()
            TestDatabase.dropScratch(database)
        }

        func register(_ name: String, token: String) async throws -> (Int, [String: Any]) {
            try await api.call("POST", "/v1/me/devices", ["platform": "webpush", "subscription": subscriptions[name]!], token: token)
        }

        /// Every push the service has received so far, as JSON.
        var received: [[String: Any]] { service.lines.filter { $0["name"] != nil } }
    }

    /// Web Push settings for push services on this machine: `localhost` allowed, a contact, a
    /// sealed key, and the operator's allowance that lets loopback addresses be reached.
    static func localPush() -> PushSettings {
        var push = PushSettings()
        push.hosts = WebPushHosts(patterns: ["localhost"])
        push.subject = "mailto:operator@roost.example"
        push.vapid = VAPIDKeys(secretKey: "a test secret")
        push.network.policy = OutboundPolicy(allowedNetworks: [IPNetwork("127.0.0.0/8")!, IPNetwork("::1")!])
        return push
    }

    /// An outbox worker that sends Web Push devices directly with `push`'s settings and network,
    /// retrying at once, each connection given `timeoutSeconds`.
    static func worker(_ pool: ConnectionPool, push: PushSettings, tls: TLSClientContext, timeoutSeconds: Int = 10) -> OutboxWorker {
        var channels = OutboxWorker.Channels()
        channels.push = .webpush
        channels.webPush = push
        channels.network = push.network
        channels.tls = tls
        var options = OutboxWorker.Options()
        options.baseBackoffSeconds = 0.001
        options.webhookTimeoutSeconds = timeoutSeconds
        return OutboxWorker(pool: pool, channels: channels, options: options, log: Log(level: .error))
    }

    @Test func alertsArriveEncryptedWithAValidVAPIDTokenAndGoneDevicesAreRemoved() async throws {
        let setup = try await Setup()
        let api = setup.api
        let ann = try await api.person(email: "ann@example.org")
        let bob = try await api.person(email: "bob@example.org")
        let (_, group) = try await api.call("POST", "/v1/groups", ["name": "Elm Row"], token: ann.token)
        let gid = try #require(group["id"] as? String)
        try await api.addMember(bob.id, to: gid, role: "member")
        // Dee's only device is gone: her red alert comes by email instead.
        let dee = try await api.person(email: "dee@example.org")
        try await api.addMember(dee.id, to: gid, role: "member")
        try await api.inTenant { _, connection in try connection.query("UPDATE users SET email_verified = true") }
        #expect(try await setup.register("gone-too", token: dee.token).0 == 201)
        let (okStatus, device) = try await setup.register("ok", token: bob.token)
        #expect(okStatus == 201 && device["platform"] as? String == "webpush", "\(device)")
        #expect(try await setup.register("gone", token: bob.token).0 == 201)

        let (_, key) = try await api.call("GET", "/v1/push/vapid-public-key")
        let publicKey = try #require(key["public_key"] as? String)
        #expect(Secrets.decodeBase64URL(publicKey)?.count == 65)

        let (posted, _) = try await api.call("POST", "/v1/groups/\(gid)/messages", ["client_msg_id": "red-1", "text": "Smoke from number 4",
                                                                                      "kind": "alert", "severity": "red"], token: ann.token)
        #expect(posted == 201)
        try await setup.worker().runOnce()
        let red = try #require(setup.received.first { $0["name"] as? String == "ok" }, "\(setup.service.process.output)")
        #expect(red["problems"] as? [String] == [], "\(red)")
        #expect(red["status"] as? Int == 201 && red["urgency"] as? String == "high" && red["content_encoding"] as? String == "aes128gcm")
        #expect(red["k"] as? String == publicKey, "signed with the key browsers subscribe with")
        #expect(red["ttl"] as? String == "21600" && (red["topic"] as? String)?.count == 32)
        let payload = try #require(red["payload"] as? [String: Any])
        #expect(payload["title"] as? String == "RED alert in Elm Row" && payload["body"] as? String == "ann: Smoke from number 4", "\(payload)")
        #expect(payload["group_id"] as? String == gid && payload["seq"] as? Int != nil && payload["template"] as? String == "alert")

        // 410: that device is gone, its delivery failed, the other stays.
        let gone = try #require(setup.received.first { $0["name"] as? String == "gone" })
        #expect(gone["status"] as? Int == 410)
        let (_, devices) = try await api.call("GET", "/v1/me/devices", token: bob.token)
        let tokens = (devices["items"] as? [[String: Any]] ?? []).compactMap { $0["token"] as? String }
        #expect(tokens == [setup.subscriptions["ok"]!["endpoint"] as! String])
        let failed = try await api.inTenant { _, connection in try OutboxStore().failed(limit: 10, on: connection) }
        #expect(failed.count == 2 && failed.allSatisfy { $0.lastError?.contains("410") == true }, "\(failed)")
        let fallbacks = try await api.inTenant { _, connection in
            try connection.query("SELECT recipient FROM outbox WHERE channel = 'email' AND template = 'alert'").rows.map { try $0.decode(String.self, "recipient") }
        }
        #expect(fallbacks == ["dee@example.org"], "Bob's other device works, so only Dee falls back")

        // Amber: normal urgency; the close collapses onto the same topic.
        let (_, amber) = try await api.call("POST", "/v1/groups/\(gid)/messages", ["client_msg_id": "amber-1", "text": "Van idling",
                                                                                   "kind": "alert", "severity": "amber"], token: ann.token)
        let seq = try #require(amber["seq"] as? Int)
        try await setup.worker().runOnce()
        _ = try await api.call("POST", "/v1/groups/\(gid)/alerts/\(seq)/close", ["resolution": "a delivery"], token: ann.token)
        try await setup.worker().runOnce()
        let lastTwo = setup.received.suffix(2)
        #expect(lastTwo.map { $0["urgency"] as? String } == ["normal", "normal"])
        #expect(lastTwo.map { ($0["payload"] as? [String: Any])?["template"] as? String } == ["alert", "alert_closed"])
        #expect(Set(lastTwo.map { $0["topic"] as? String }).count == 1, "one alert, one topic")
        #expect(lastTwo.allSatisfy { ($0["problems"] as? [String]) == [] })
        await setup.finish()
    }

    @Test func onlyHTTPSEndpointsOnAllowedPushServicesWithRealKeysAreRegistered() async throws {
        let setup = try await Setup()
        let ann = try await setup.api.person(email: "ann@example.org")
        let keys = try #require(setup.subscriptions["ok"]?["keys"] as? [String: String])
        let port = try #require(URL(string: setup.subscriptions["ok"]!["endpoint"] as! String)?.port)
        for (endpoint, keys) in [
            ("https://169.254.169.254/latest/meta-data", keys),
            ("https://localhost:\(port)/push/ok%", keys),
            ("https://push.evil.example/x", keys),
            ("http://localhost:\(port)/push/ok", keys),
            ("https://user:pw@localhost:\(port)/push/ok", keys),
            ("https://localhost:\(port)/push/ok", ["p256dh": Secrets.base64URL([4] + [UInt8](repeating: 7, count: 64)), "auth": keys["auth"]!]),
            ("https://localhost:\(port)/push/ok", ["p256dh": keys["p256dh"]!, "auth": "c2hvcnQ"]),
        ] {
            let (status, body) = try await setup.api.call("POST", "/v1/me/devices",
                                                          ["platform": "webpush", "subscription": ["endpoint": endpoint, "keys": keys]], token: ann.token)
            #expect(status == 400 && (body["error"] as? [String: Any])?["field"] as? String != nil, "\(endpoint): \(status) \(body)")
        }
        let (bare, _) = try await setup.api.call("POST", "/v1/me/devices", ["platform": "webpush", "token": "opaque"], token: ann.token)
        #expect(bare == 400)
        await setup.finish()
    }

    /// A UnifiedPush distributor's endpoint (an ntfy server, say) is on no allow-list: any
    /// public host (here this machine, which the test's outbound policy admits) gets the same
    /// encrypted, VAPID-signed push as a browser's push service.
    @Test func aUnifiedPushDeviceOnItsDistributorsServerGetsTheSameEncryptedPush() async throws {
        let setup = try await Setup()
        var push = setup.push
        push.hosts = WebPushHosts(patterns: ["push.example.org"])
        let api = try APIFixture(database: setup.database, push: push)
        let ann = try await api.person(email: "ann@example.org")
        let bob = try await api.person(email: "bob@example.org")
        let (_, group) = try await api.call("POST", "/v1/groups", ["name": "Elm Row"], token: ann.token)
        let gid = try #require(group["id"] as? String)
        try await api.addMember(bob.id, to: gid, role: "member")
        let subscription = try #require(setup.subscriptions["other"])
        // Not a browser push service on the allow-list: as webpush it is refused; as UnifiedPush it is taken.
        #expect(try await api.call("POST", "/v1/me/devices", ["platform": "webpush", "subscription": subscription], token: bob.token).0 == 400)
        let endpoint = try #require(subscription["endpoint"] as? String)
        let plain = ["endpoint": endpoint.replacingOccurrences(of: "https://", with: "http://"), "keys": subscription["keys"]!]
        #expect(try await api.call("POST", "/v1/me/devices", ["platform": "unifiedpush", "subscription": plain], token: bob.token).0 == 400)
        let (status, device) = try await api.call("POST", "/v1/me/devices", ["platform": "unifiedpush", "subscription": subscription], token: bob.token)
        #expect(status == 201 && device["platform"] as? String == "unifiedpush" && device["token"] as? String == endpoint, "\(device)")

        let (posted, _) = try await api.call("POST", "/v1/groups/\(gid)/messages", ["client_msg_id": "red-up", "text": "Smoke from number 4",
                                                                                      "kind": "alert", "severity": "red"], token: ann.token)
        #expect(posted == 201)
        try await WebPushDeliveryTests.worker(api.pool, push: push, tls: TLSClientContext(extraCAFile: setup.ca)).runOnce()
        let received = try #require(setup.received.first { $0["name"] as? String == "other" }, "\(setup.service.process.output)")
        #expect(received["problems"] as? [String] == [] && received["status"] as? Int == 201, "\(received)")
        #expect(received["urgency"] as? String == "high" && received["content_encoding"] as? String == "aes128gcm")
        let payload = try #require(received["payload"] as? [String: Any])
        #expect(payload["title"] as? String == "RED alert in Elm Row" && payload["body"] as? String == "ann: Smoke from number 4", "\(payload)")
        await api.stop()
        await setup.finish()
    }

    @Test func theVAPIDKeyIsMadeOnceSealedAndOpensOnlyWithItsSecret() async throws {
        let database = try TestDatabase.makeScratch()
        defer { TestDatabase.dropScratch(database) }
        let pool = ConnectionPool(configuration: TestDatabase.configuration(database: database), options: .init(maxConnections: 2))
        defer { pool.close() }
        let first = try await VAPIDKeys(secretKey: "one secret").key(pool)
        #expect(try await VAPIDKeys(secretKey: "one secret").key(pool).publicPoint == first.publicPoint, "another node reads the same key")
        await #expect(throws: ConfigurationError.self) { try await VAPIDKeys(secretKey: "another").key(pool) }
        await #expect(throws: ConfigurationError.self) { try await VAPIDKeys(secretKey: nil).key(pool) }
        let stored = try await pool.withConnection { try VAPIDKeyStore().load(on: $0) }
        #expect(stored?.sealed == true && stored.map { !MediaTests.contains($0.privateKey, first.privateKeyDER) } == true)
    }

    @Test func allowListsMatchWholeNames() throws {
        let hosts = WebPushHosts.publicServices
        #expect(hosts.allows("fcm.googleapis.com") && hosts.allows("web.push.apple.com") && hosts.allows("wns2-db5p.notify.windows.com"))
        #expect(!hosts.allows("push.apple.com.evil.example") && !hosts.allows("evilpush.apple.com") && !hosts.allows("googleapis.com"))
        #expect(throws: ConfigurationError.self) { try WebPushHosts(parsing: "https://fcm.googleapis.com") }
    }
}
