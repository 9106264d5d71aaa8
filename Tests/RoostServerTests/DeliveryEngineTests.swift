import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Testing

/// The delivery engine against real push services (scripts/lib/push_service.py: HTTPS on a test
/// CA, HTTP/1.1 keep-alive, every payload decrypted with http_ece and every VAPID token checked
/// with the cryptography package): a fanout goes over the origin's kept connections, and one
/// origin's trouble (a 429, a hang) stays that origin's.
@Suite(.enabled(if: TestDatabase.isConfigured && SpecTool.python != nil, "needs TEST_DATABASE_URL and ROOST_TEST_PYTHON (scripts/test sets both)"),
       .serialized)
struct DeliveryEngineTests {
    /// A street whose members' devices are on one or two push services.
    final class Street: @unchecked Sendable {
        let services: [ScriptService]
        let caFile: URL
        let database: String
        let api: APIFixture
        let push: PushSettings
        let owner: APIFixture.Person
        let group: String

        init(services count: Int, http2: Bool = false) async throws {
            var services: [ScriptService] = []
            for _ in 0..<count {
                services.append(try await ScriptService("push_service.py", readyKey: "subscriptions", arguments: http2 ? ["--http2"] : []))
            }
            self.services = services
            // One file with every service's CA, as ROOST_TLS_CA_FILE would hold them.
            caFile = FileManager.default.temporaryDirectory.appendingPathComponent("roost-cas-\(UUID().uuidString).pem")
            let pems = try services.map { try String(contentsOfFile: try #require($0.ready["ca"] as? String), encoding: .utf8) }
            try pems.joined(separator: "\n").write(to: caFile, atomically: true, encoding: .utf8)
            push = WebPushDeliveryTests.localPush()
            database = try TestDatabase.makeScratch()
            api = try APIFixture(database: database, push: push)
            owner = try await api.person(email: "ann@example.org")
            let (_, created) = try await api.call("POST", "/v1/groups", ["name": "Elm Row"], token: owner.token)
            group = try #require(created["id"] as? String)
        }

        /// A member with `devices` Web Push devices named `name~<n>` on `service`, seeded in SQL.
        func member(_ email: String, devices: Range<Int>, named name: String, on service: Int) async throws -> APIFixture.Person {
            let person = try await api.person(email: email)
            try await api.addMember(person.id, to: group, role: "member")
            let subscription = try #require((services[service].ready["subscriptions"] as? [String: [String: Any]])?[name])
            let endpoint = try #require(subscription["endpoint"] as? String)
            let keys = try #require(subscription["keys"] as? [String: String])
            let p256dh = Data(try #require(Secrets.decodeBase64URL(keys["p256dh"]!)))
            let auth = Data(try #require(Secrets.decodeBase64URL(keys["auth"]!)))
            let tokens = devices.map { "\(endpoint)~\($0)" }
            let user = person.id
            try await api.inTenant { tenant, connection in
                try connection.query("""
                    INSERT INTO devices (tenant_id, user_id, platform, token, p256dh, auth)
                    SELECT \(tenant), \(UUID(uuidString: user)!), 'webpush', t, \(p256dh), \(auth) FROM unnest(\(tokens)::text[]) AS t
                    """)
            }
            return person
        }

        func worker(connections: Int, timeoutSeconds: Int = 10, metrics: DeliveryMetrics = DeliveryMetrics()) throws -> OutboxWorker {
            var channels = OutboxWorker.Channels()
            channels.push = .webpush
            channels.webPush = push
            channels.network = push.network
            channels.tls = try TLSClientContext(extraCAFile: caFile.path)
            var options = OutboxWorker.Options()
            options.connectionsPerOrigin = connections
            options.webhookTimeoutSeconds = timeoutSeconds
            // A failed attempt's retry never comes due while a test runs, however slow the
            // machine: a test that loops rounds until none is claimed sees each push once.
            options.baseBackoffSeconds = 600
            return OutboxWorker(pool: api.pool, channels: channels, options: options, log: Log(level: .error), deliveries: metrics)
        }

        func raise(_ text: String, severity: String = "red") async throws {
            let (status, body) = try await api.call("POST", "/v1/groups/\(group)/messages",
                                                    ["client_msg_id": UUID().uuidString, "text": text, "kind": "alert", "severity": severity],
                                                    token: owner.token)
            #expect(status == 201, "\(body)")
        }

        /// The pushes service `index` received (name, status, problems, payload...).
        func received(_ index: Int) -> [[String: Any]] { services[index].lines.filter { $0["name"] != nil } }

        /// Connections service `index` accepted.
        func connections(_ index: Int) -> Int { services[index].lines.filter { $0["connection"] != nil }.count }

        /// The protocols of the connections service `index` accepted.
        func protocols(_ index: Int) -> Set<String> { Set(services[index].lines.compactMap { $0["protocol"] as? String }) }

        /// The outbox's push rows by status, with their attempts.
        func pushes() async throws -> [(recipient: String, status: String, attempts: Int, waitSeconds: Double)] {
            try await api.inTenant { _, connection in
                try connection.query("""
                    SELECT recipient, status, attempts, extract(epoch FROM next_attempt_at - now())::float8 AS wait
                    FROM outbox WHERE channel = 'push' ORDER BY recipient
                    """).rows.map {
                    (try $0.decode(String.self, "recipient"), try $0.decode(String.self, "status"), try $0.decode(Int.self, "attempts"),
                     try $0.decode(Double.self, "wait"))
                }
            }
        }

        func finish() async {
            await api.stop()
            for service in services { await service.stop() }
            try? FileManager.default.removeItem(at: caFile)
            TestDatabase.dropScratch(database)
        }
    }

    @Test func twoThousandDevicesGetTheAlertOverTheOriginsKeptConnections() async throws {
        let street = try await Street(services: 1)
        for member in 0..<20 {
            _ = try await street.member("m\(member)@example.org", devices: (member * 100)..<(member * 100 + 100), named: "ok", on: 0)
        }
        try await street.raise("Fire at number 9")
        // A group this large gets one fanout job with its alert, not 2,000 rows.
        let written = try await street.api.inTenant { _, connection in
            try connection.query("SELECT (SELECT count(*) FROM outbox) AS rows, (SELECT count(*) FROM fanout_jobs) AS jobs").rows[0]
        }
        #expect(try written.decode(Int.self, "rows") == 0 && written.decode(Int.self, "jobs") == 1)
        let metrics = DeliveryMetrics()
        let worker = try street.worker(connections: 8, metrics: metrics)
        var claimed = 0
        while case let round = try await worker.runOnce(), round > 0 { claimed += round }
        #expect(claimed == 2000)

        let received = street.received(0)
        let names = Set(received.compactMap { $0["name"] as? String })
        #expect(names == Set((0..<2000).map { "ok~\($0)" }), "every device, \(names.count) of 2000")
        #expect(received.allSatisfy { $0["status"] as? Int == 201 && ($0["problems"] as? [String]) == [] },
                "\(received.first { ($0["problems"] as? [String]) != [] } ?? [:])")
        #expect(received.allSatisfy { ($0["payload"] as? [String: Any])?["body"] as? String == "ann: Fire at number 9" })
        #expect(street.connections(0) <= 8, "2,000 pushes over \(street.connections(0)) connections")
        let rows = try await street.pushes()
        #expect(rows.count == 2000 && rows.allSatisfy { $0.status == "delivered" && $0.attempts == 1 })
        let text = metrics.render(waiting: [:])
        #expect(text.contains(#"roost_deliveries_total{channel="push",lane="critical",outcome="delivered"} 2000"#), "\(text)")
        #expect(text.contains(#"roost_delivery_accepted_seconds_count{channel="push"} 2000"#))
        let opened = text.split(separator: "\n").filter { $0.hasPrefix("roost_delivery_connections_opened_total{") }
            .compactMap { Int($0.split(separator: " ").last ?? "") }.reduce(0, +)
        #expect(opened == street.connections(0), "the metrics count the connections the service saw: \(opened)")
        await street.finish()
    }

    @Test func overHTTP2TwoThousandPushesShareFourConnectionsAndAHangingPushTimesOutAlone() async throws {
        let street = try await Street(services: 1, http2: true)
        for member in 0..<20 {
            _ = try await street.member("m\(member)@example.org", devices: (member * 100)..<(member * 100 + 100), named: "ok", on: 0)
        }
        let hang = try await street.member("hang@example.org", devices: 0..<1, named: "hang", on: 0)
        _ = try await street.member("gone@example.org", devices: 0..<1, named: "gone", on: 0)
        try await street.raise("Flood on the river path")
        let worker = try street.worker(connections: 8, timeoutSeconds: 5)
        let rounds = Task {
            var claimed = 0
            while case let round = try await worker.runOnce(), round > 0 { claimed += round }
            return claimed
        }
        #expect(try await rounds.value == 2002)

        let received = street.received(0)
        let delivered = received.filter { ($0["name"] as? String)?.hasPrefix("ok~") == true }
        let missing = Set((0..<2000).map { "ok~\($0)" }).subtracting(delivered.compactMap { $0["name"] as? String })
        #expect(missing.isEmpty, "\(missing.count) devices got nothing, among them \(missing.sorted().prefix(5))")
        #expect(delivered.allSatisfy { $0["status"] as? Int == 201 && ($0["problems"] as? [String]) == [] },
                "\(delivered.first { ($0["problems"] as? [String]) != [] } ?? [:])")
        #expect(delivered.allSatisfy { ($0["payload"] as? [String: Any])?["body"] as? String == "ann: Flood on the river path" })
        #expect(street.protocols(0) == ["h2"] && (1...4).contains(street.connections(0)), "\(street.connections(0)) connections")
        let rows = try await street.pushes()
        // The hanging push timed out (its stream cancelled), to be tried again; the gone device was removed.
        let hanging = rows.filter { $0.recipient.contains("/push/hang") }
        #expect(hanging.count == 1 && hanging[0].status == "pending" && hanging[0].attempts == 1, "\(hanging)")
        #expect(rows.filter { $0.recipient.contains("/push/gone") }.map(\.status) == ["failed"])
        let devices = try await street.api.inTenant { _, connection in
            try connection.query("SELECT token FROM devices WHERE token LIKE '%/push/gone%' OR user_id = \(UUID(uuidString: hang.id)!)").rows.count
        }
        #expect(devices == 1, "the gone device is removed, the hanging one kept")
        await street.finish()
    }

    @Test func aPushServiceThatAsksToSlowDownHoldsBackOnlyItsOwnPushes() async throws {
        let street = try await Street(services: 2)
        _ = try await street.member("bob@example.org", devices: 0..<3, named: "busy", on: 0)
        _ = try await street.member("cy@example.org", devices: 0..<3, named: "ok", on: 1)
        try await street.raise("Break-in at number 3")
        let worker = try street.worker(connections: 1)
        #expect(try await worker.runOnce() == 6)

        // The other service got its pushes; the busy one was asked once, and its pushes wait for
        // its Retry-After with no attempt counted.
        #expect(street.received(1).filter { $0["status"] as? Int == 201 }.count == 3)
        #expect(street.received(0).count == 1 && street.received(0).first?["status"] as? Int == 429)
        let rows = try await street.pushes()
        let busy = rows.filter { $0.recipient.contains("/push/busy") }
        #expect(busy.count == 3 && busy.allSatisfy { $0.status == "pending" && $0.attempts == 0 && $0.waitSeconds > 50 }, "\(busy)")
        #expect(rows.filter { $0.recipient.contains("/push/ok") }.allSatisfy { $0.status == "delivered" })
        // Nothing is due: the next round asks the busy service nothing.
        #expect(try await worker.runOnce() == 0)
        #expect(street.received(0).count == 1)
        await street.finish()
    }

    @Test func aPushServiceThatHangsDelaysNoOtherOrigin() async throws {
        let street = try await Street(services: 2)
        _ = try await street.member("bob@example.org", devices: 0..<1, named: "hang", on: 0)
        _ = try await street.member("cy@example.org", devices: 0..<2, named: "ok", on: 1)
        try await street.raise("Smoke on the corner")
        let worker = try street.worker(connections: 4, timeoutSeconds: 5)
        let round = Task { try await worker.runOnce() }
        // The other service's pushes are written back delivered while the hanging one is still
        // being waited for: its attempt has not ended.
        #expect(try await Poll.until(every: .milliseconds(20)) {
            try await street.pushes().filter { $0.recipient.contains("/push/ok") && $0.status == "delivered" }.count == 2
        })
        let hanging = try await street.pushes().filter { $0.recipient.contains("/push/hang") }
        #expect(hanging.count == 1 && hanging[0].status == "pending" && hanging[0].attempts == 0, "\(hanging)")
        // Then it times out, and is a failed attempt to retry.
        #expect(try await round.value == 3)
        let after = try await street.pushes().filter { $0.recipient.contains("/push/hang") }
        #expect(after.count == 1 && after[0].status == "pending" && after[0].attempts == 1, "\(after)")
        await street.finish()
    }
}
