import Foundation
import RoostPersistence
import RoostProtocol
import RoostServer
import RoostTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A red alert's fanout across `roost serve` nodes sending Web Push to a real HTTPS push
/// service (scripts/lib/push_service.py): the node sending it is killed with SIGKILL half-way,
/// and another node finishes it once the dead node's leases run out.
@Suite(.enabled(if: TestDatabase.isConfigured && ProcessInfo.processInfo.environment["ROOST_TEST_PYTHON"] != nil,
                "needs TEST_DATABASE_URL and ROOST_TEST_PYTHON (scripts/test sets both)"))
struct DeliveryNodesTests {
    static let devices = 600

    @Test func aNodeKilledMidFanoutLeavesTheRestToAnother() async throws {
        try await TestDatabase.withScratchDatabaseAsync { database in
            let url = TestDatabase.configuration(database: database).connectionString
            let connection = try TestDatabase.connect(database: database)
            try Migrator(migrations: Migration.load(from: TestDatabase.migrationsDirectory)).run(on: connection)
            _ = try TenantStore().create(slug: "fanout-nodes", name: "Fanout Nodes", registration: .open, on: connection)

            let root = TestDatabase.migrationsDirectory.deletingLastPathComponent()
            let serviceDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("roost-push-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: serviceDirectory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: serviceDirectory) }
            let service = try RunningProcess(ProcessInfo.processInfo.environment["ROOST_TEST_PYTHON"]!,
                                             [root.appendingPathComponent("scripts/lib/push_service.py").path, "serve", serviceDirectory.path],
                                             environment: ["PUSH_SERVICE_DELAY_MS": "10", "PUSH_SERVICE_HOLD_AFTER": "100"])
            defer { service.signal(SIGTERM) }
            let ready = try #require(await service.waitForLine(containing: "\"subscriptions\""), "\(service.output)")
            let announced = try #require(try JSONSerialization.jsonObject(with: Data(ready.utf8)) as? [String: Any])
            let ok = try #require((announced["subscriptions"] as? [String: [String: Any]])?["ok"])
            let environment = [
                "ROOST_PUSH": "webpush", "ROOST_WEBPUSH_HOSTS": "localhost", "ROOST_OUTBOUND_ALLOW_NETS": "127.0.0.0/8",
                "ROOST_VAPID_SUBJECT": "mailto:ops@roost.example", "ROOST_TLS_CA_FILE": try #require(announced["ca"] as? String),
                "ROOST_DELIVERY_CONNECTIONS": "8", "ROOST_DELIVERY_LEASE_S": "10",
            ]
            let first = try await ServeProcess(databaseURL: url, environment: environment)
            let api = try APIClient(port: first.port)
            let (registered, account) = try await api.call("POST", "/v1/auth/register", ["tenant": "fanout-nodes", "email": "ann@example.org",
                                                                                          "password": "a long enough password", "display_name": "Ann"])
            let token = try #require(account["token"] as? String, "\(registered) \(account)")
            let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm Row"], token: token).1["id"] as? String)
            // Six members with a hundred devices each, seeded in SQL.
            let keys = try #require(ok["keys"] as? [String: String])
            let endpoint = try #require(ok["endpoint"] as? String)
            try connection.withTenantTransaction(try #require(try TenantStore().find(slug: "fanout-nodes", on: connection)).id) { connection in
                let tenant = try #require(try TenantStore().find(slug: "fanout-nodes", on: connection)).id
                for member in 0..<6 {
                    let user = try UserStore().create(tenant: tenant, email: "m\(member)@example.org", phone: nil, passwordHash: "x",
                                                      displayName: "M\(member)", on: connection).id
                    try connection.query("""
                        INSERT INTO memberships (tenant_id, group_id, user_id, role) VALUES (\(tenant), \(UUID(uuidString: group)!), \(user), 'member')
                        """)
                    let tokens = (0..<100).map { "\(endpoint)~\(member * 100 + $0)" }
                    try connection.query("""
                        INSERT INTO devices (tenant_id, user_id, platform, token, p256dh, auth)
                        SELECT \(tenant), \(user), 'webpush', t, \(Data(Secrets.decodeBase64URL(keys["p256dh"]!)!)),
                               \(Data(Secrets.decodeBase64URL(keys["auth"]!)!)) FROM unnest(\(tokens)::text[]) AS t
                        """)
                }
            }
            let (status, _) = try await api.call("POST", "/v1/groups/\(group)/messages",
                                                 ["client_msg_id": "fire", "text": "Fire at number 9", "kind": "alert", "severity": "red"],
                                                 token: token)
            #expect(status == 201)

            func pushes() -> [[String: Any]] {
                service.output.split(separator: "\n").dropFirst().compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                    .filter { $0["name"] != nil }
            }
            // Part of the fanout is out (the service answers 100 pushes, then holds the rest however
            // fast the machine): kill the node sending it, with no chance to tidy up.
            #expect(try await Poll.until(every: .milliseconds(10)) { pushes().count >= 100 })
            first.process.signal(SIGKILL)
            #expect(await first.process.wait() == 128 + SIGKILL)
            let sentByTheFirst = pushes().count
            #expect(sentByTheFirst < Self.devices, "the first node was killed before it finished (\(sentByTheFirst))")
            #expect(FileManager.default.createFile(atPath: serviceDirectory.appendingPathComponent("release").path, contents: Data()))

            // Another node finishes it once the dead node's leases (10 s) run out.
            let second = try await ServeProcess(databaseURL: url, environment: environment)
            defer { second.process.signal(SIGTERM) }
            let tenant = try #require(try TenantStore().find(slug: "fanout-nodes", on: connection)).id
            func undelivered() throws -> Int {
                try connection.withTenantTransaction(tenant) {
                    try $0.query("SELECT count(*) AS n FROM outbox WHERE channel = 'push' AND status <> 'delivered'").rows[0].decode(Int.self, "n")
                }
            }
            #expect(try await Poll.until(within: .seconds(120), every: .milliseconds(100)) { try undelivered() == 0 })

            let received = pushes()
            var perDevice: [String: [[String: Any]]] = [:]
            for push in received { perDevice[push["name"] as? String ?? "", default: []].append(push) }
            #expect(perDevice.count == Self.devices, "every device got the alert: \(perDevice.count) of \(Self.devices)")
            #expect(received.allSatisfy { $0["status"] as? Int == 201 && ($0["problems"] as? [String]) == [] })
            // What the dead node had sent but not yet written back is sent again: at most one
            // claim's worth, and each copy has the alert's Topic, so the phone keeps one.
            let duplicates = received.count - perDevice.count
            print("fanout across nodes: the first sent \(sentByTheFirst) before SIGKILL; \(received.count) pushes for \(perDevice.count) devices, \(duplicates) duplicates")
            #expect(duplicates <= 256, "\(duplicates) duplicates")
            #expect(perDevice.values.allSatisfy { Set($0.compactMap { $0["topic"] as? String }).count == 1 })
        }
    }
}
