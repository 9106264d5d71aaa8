import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol
import RoostServer
import RoostTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The outbox across processes: real `roost serve` nodes in webhook mode on one database of
/// the test's own (so no other test's worker takes its rows), delivering to a sink the test runs.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct OutboxProcessTests {
    /// Answers 503 to the first attempt at each delivery and 200 after; counts what it accepted.
    final class Sink: Sendable {
        final class Tally: Sendable {
            let counts = Mutex<[String: Int]>([:])
        }
        private let attempts = Tally()
        let server: HTTPServer

        init() throws {
            var builder = Router.Builder()
            let attempts = self.attempts
            builder.add(.post, "/sink") { context in
                let object = try? JSONSerialization.jsonObject(with: Data(context.request.body)) as? [String: Any]
                let id = object?["id"] as? String ?? "?"
                let seen = attempts.counts.withLock { counts -> Int in
                    counts[id, default: 0] += 1
                    return counts[id]!
                }
                return HTTPResponse(status: seen == 1 ? .serviceUnavailable : .ok)
            }
            server = try HTTPServer(router: builder.build(), limits: NetworkLimits(), addresses: [.inet(host: "127.0.0.1", port: 0)],
                                    threads: 1, log: Log(level: .error), accessLog: false)
            try server.start()
        }

        var port: UInt16 { server.boundPorts[0] }
        /// Attempts per delivery id.
        var counts: [String: Int] { attempts.counts.withLock { $0 } }
    }

    @Test func twoNodesDeliverEachRowOnceAndANodeRestartedMidRetryLosesNothing() async throws {
        try await TestDatabase.withScratchDatabaseAsync { database in
            let url = TestDatabase.configuration(database: database).connectionString
            let connection = try TestDatabase.connect(database: database)
            try Migrator(migrations: Migration.load(from: TestDatabase.migrationsDirectory)).run(on: connection)
            let tenant = try TenantStore().create(slug: "outbox-nodes", name: "Outbox Nodes", registration: .open, on: connection).id
            let ids = try connection.withTenantTransaction(tenant) { connection in
                try (0..<40).map { index in
                    try OutboxStore().enqueue(tenant: tenant, channel: .email, recipient: "n\(index)@example.org", template: .invitation,
                                              data: RawJSON(#"{"token":"t\#(index)"}"#), on: connection).uuidString.lowercased()
                }
            }
            let sink = try Sink()
            let environment = ["ROOST_DELIVERY": "webhook", "ROOST_DELIVERY_WEBHOOK_URL": "http://127.0.0.1:\(sink.port)/sink"]
            let first = try await ServeProcess(databaseURL: url, environment: environment)
            let second = try await ServeProcess(databaseURL: url, environment: environment)

            // Every row has failed once (each is now waiting out its backoff): restart one node.
            try await Poll.until { sink.counts.count >= ids.count }
            #expect(sink.counts.count == ids.count, "first attempts reached the sink for \(sink.counts.count) of \(ids.count)")
            first.process.signal(SIGTERM)
            #expect(await first.process.wait() == 0)
            let third = try await ServeProcess(databaseURL: url, environment: environment)

            func pending() throws -> Int {
                try connection.withTenantTransaction(tenant) {
                    try $0.query("SELECT count(*) AS n FROM outbox WHERE status <> 'delivered'").rows[0].decode(Int.self, "n")
                }
            }
            try await Poll.until(every: .milliseconds(50)) { try pending() == 0 }
            #expect(try pending() == 0)
            // Exactly two attempts per row: the refused first one and one delivery, never two.
            #expect(sink.counts.filter { ids.contains($0.key) }.values.allSatisfy { $0 == 2 }, "\(sink.counts.values.sorted())")
            #expect(Set(sink.counts.keys) == Set(ids))
            for node in [second, third] {
                node.process.signal(SIGTERM)
                #expect(await node.process.wait() == 0)
            }
            await sink.server.shutdown()
        }
    }
}
