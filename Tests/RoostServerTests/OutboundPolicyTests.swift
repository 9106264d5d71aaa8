import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Synchronization
import Testing

/// The outbound policy as an attacker with one account meets it (docs/SECURITY.md, "Outbound
/// requests"): hostile endpoints refused as they are registered, and a name that comes to lead
/// inside the network after registration never connected to, over a real socket that counts.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL"), .serialized)
struct OutboundPolicyTests {
    /// The test's own hosts entries: a name answers what the test last said, at any port.
    final class Hosts: Sendable {
        private let entries = Mutex<[String: OutboundResolver.Answer]>([:])

        func set(_ name: String, _ address: String, port: Int = 443) {
            entries.withLock { $0[name] = OutboundResolver.Answer(address: IPAddress(address)!, port: port) }
        }

        var resolver: OutboundResolver {
            OutboundResolver { [self] host, _ throws(OutboundFailure) in
                guard let answer = entries.withLock({ $0[host] }) else { throw OutboundFailure("cannot resolve \(host)") }
                return [answer]
            }
        }
    }

    final class Setup: @unchecked Sendable {
        let hosts = Hosts()
        let database: String
        let api: APIFixture
        let push: PushSettings

        init(allowing networks: [String] = []) throws {
            var push = PushSettings()
            push.hosts = WebPushHosts(patterns: ["push.example.test", "*.push.apple.com"])
            push.subject = "mailto:operator@roost.example"
            push.vapid = VAPIDKeys(secretKey: "a test secret")
            push.network.policy = OutboundPolicy(allowedNetworks: networks.map { IPNetwork($0)! })
            push.network.resolver = hosts.resolver
            self.push = push
            database = try TestDatabase.makeScratch()
            api = try APIFixture(database: database, push: push)
        }

        func worker() throws -> OutboxWorker {
            try WebPushDeliveryTests.worker(api.pool, push: push, tls: TLSClientContext(), timeoutSeconds: 1)
        }

        func register(_ endpoint: String, token: String) async throws -> (Int, [String: Any]) {
            let keys = ["p256dh": Secrets.base64URL(try P256Key.generate().publicPoint), "auth": Secrets.base64URL(Secrets.randomBytes(16))]
            return try await api.call("POST", "/v1/me/devices", ["platform": "webpush", "subscription": ["endpoint": endpoint, "keys": keys]], token: token)
        }

        /// Ann, with a group and a device on push.example.test; the push for a red alert queued.
        func redAlertToADevice() async throws {
            let ann = try await api.person(email: "ann@example.org")
            let bob = try await api.person(email: "bob@example.org")
            let (_, group) = try await api.call("POST", "/v1/groups", ["name": "Elm Row"], token: ann.token)
            let gid = try #require(group["id"] as? String)
            try await api.addMember(bob.id, to: gid, role: "member")
            let (registered, body) = try await register("https://push.example.test/wpush/v2/bob", token: bob.token)
            #expect(registered == 201, "\(body)")
            let (posted, _) = try await api.call("POST", "/v1/groups/\(gid)/messages",
                                                 ["client_msg_id": "red-1", "text": "Smoke", "kind": "alert", "severity": "red"], token: ann.token)
            #expect(posted == 201)
        }

        /// The Web Push rows' status, attempts and error.
        func pushRows() async throws -> [(String, Int, String?)] {
            try await api.inTenant { _, connection in
                try connection.query("SELECT status, attempts, last_error FROM outbox WHERE channel = 'push' AND data->>'platform' = 'webpush'").rows.map {
                    (try $0.decode(String.self, "status"), try $0.decode(Int.self, "attempts"), try $0.decode(String?.self, "last_error"))
                }
            }
        }

        func finish() async {
            await api.stop()
            TestDatabase.dropScratch(database)
        }
    }

    @Test func hostileEndpointsAreRefusedAsTheyAreRegistered() async throws {
        let setup = try Setup()
        let ann = try await setup.api.person(email: "ann@example.org")
        setup.hosts.set("push.example.test", "10.0.0.7")
        setup.hosts.set("web.push.apple.com", "17.253.144.10")
        for endpoint in [
            "https://127.0.0.1%00.push.apple.com:9/x",
            "https://127.0.0.1%2f.push.apple.com/x",
            "https://web.push.apple.com/x\r\nX-Injected: 1",
            "https://web.push.apple.com/a b",
            "https://web.push.apple.com/a\u{0}b",
            "https://web.push.apple.com:8443/x",
            "https://web.push.apple.com./x",
            "https://ann@web.push.apple.com/x",
            "https://web.push.apple.com\\@evil.example/x",
            "https://17.253.144.10/x",
            "https://[::ffff:127.0.0.1]/x",
            "https://2130706433/x",
            "https://0177.0.0.1/x",
            "http://web.push.apple.com/x",
            // A name on the allow-list that leads inside the network.
            "https://push.example.test/x",
        ] {
            let (status, body) = try await setup.register(endpoint, token: ann.token)
            let error = body["error"] as? [String: Any]
            #expect(status == 400 && error?["field"] as? String == "subscription.endpoint", "\(endpoint.debugDescription): \(status) \(body)")
        }
        // The same name once it leads to a public address, and a percent-escaped CR LF, which is
        // sent as the escape it is.
        setup.hosts.set("push.example.test", "93.184.215.14")
        #expect(try await setup.register("https://push.example.test/x", token: ann.token).0 == 201)
        #expect(try await setup.register("https://web.push.apple.com/x%0d%0aX-Injected:%201", token: ann.token).0 == 201)
        await setup.finish()
    }

    @Test func aNameThatLeadsInsideTheNetworkAfterRegistrationIsNeverConnectedTo() async throws {
        let setup = try Setup()
        let listener = try CountingListener()
        setup.hosts.set("push.example.test", "93.184.215.14")
        try await setup.redAlertToADevice()
        // DNS changes after registration: the name now leads to a listener on this machine.
        setup.hosts.set("push.example.test", "127.0.0.1", port: listener.port)
        try await setup.worker().runOnce()
        #expect(listener.acceptedSoFar() == 0, "the policy let a delivery connect to 127.0.0.1")
        let rows = try await setup.pushRows()
        #expect(rows.count == 1 && rows[0].0 == "failed" && rows[0].1 == 1, "refused once, never retried: \(rows)")
        #expect(rows.first?.2?.contains("127.0.0.1, a loopback address") == true, "\(rows)")
        await setup.finish()
    }

    @Test func anOperatorsAllowedNetworkIsReachedByTheSameDelivery() async throws {
        // The control for the test above: the listener counts the connection when the operator
        // allows its network (so a zero there means refused, not unreachable).
        let setup = try Setup(allowing: ["127.0.0.0/8"])
        let listener = try CountingListener()
        setup.hosts.set("push.example.test", "93.184.215.14")
        try await setup.redAlertToADevice()
        setup.hosts.set("push.example.test", "127.0.0.1", port: listener.port)
        try await setup.worker().runOnce()
        #expect(listener.acceptedSoFar() == 1)
        let rows = try await setup.pushRows()
        #expect(rows.count == 1 && rows[0].0 == "pending" && rows[0].2?.contains("refused") == false, "a timeout is retried: \(rows)")
        await setup.finish()
    }
}
