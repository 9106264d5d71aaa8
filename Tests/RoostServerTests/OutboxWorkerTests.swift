import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Synchronization
import Testing

/// A webhook receiver: answers 503 to the first `failures` attempts of each delivery, then 200,
/// and remembers what it received.
final class WebhookSink: Sendable {
    struct Received: Sendable {
        let id: String
        let accepted: Bool
        let signatureValid: Bool
        let body: [UInt8]

        /// The delivery as JSON (`id`, `channel`, `to`, `template`, `tenant`, `data`).
        var object: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:] }
    }

    let failures: Int
    let secret: String
    private let log = Mutex<[Received]>([])

    init(failures: Int, secret: String = "sink-secret") {
        self.failures = failures
        self.secret = secret
    }

    var received: [Received] { log.withLock { $0 } }

    func acceptedCount(_ id: String) -> Int { received.filter { $0.id == id && $0.accepted }.count }

    /// Waits (bounded) for the first accepted delivery to `recipient` with `template` (of
    /// `tenant`, when given); its JSON.
    func awaitDelivery(to recipient: String, template: String, tenant: String? = nil, timeout: Duration = .seconds(20)) async throws -> [String: Any] {
        var found: [String: Any]?
        try await Poll.until(within: timeout, every: .milliseconds(10)) {
            found = received.first(where: {
                $0.accepted && $0.object["to"] as? String == recipient && $0.object["template"] as? String == template
                    && (tenant == nil || $0.object["tenant"] as? String == tenant)
            })?.object
            return found != nil
        }
        guard let found else { throw TestClientError("no \(template) delivery to \(recipient) within \(timeout)") }
        return found
    }

    func route(_ builder: inout Router.Builder) {
        builder.add(.post, "/sink") { [self] context in
            let body = context.request.body
            let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
            let id = object?["id"] as? String ?? "?"
            let timestamp = context.request.headers["X-Roost-Timestamp"] ?? ""
            let expected = "sha256=" + Digest.hex(Secrets.hmacSHA256(key: Array(secret.utf8), message: Array((timestamp + ".").utf8) + body))
            let valid = context.request.headers["X-Roost-Signature"] == expected
            let accepted = log.withLock { log -> Bool in
                let earlier = log.filter { $0.id == id }.count
                log.append(Received(id: id, accepted: earlier >= failures, signatureValid: valid, body: body))
                return earlier >= failures
            }
            return HTTPResponse(status: accepted ? .ok : .serviceUnavailable)
        }
    }
}

/// Suites that run outbox workers. A worker claims any due row of its database, and scrubs the
/// tokens of what it delivers, so each test's worker runs on a database of the test's own.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"), .serialized)
enum OutboxDeliveryTests {}

extension OutboxDeliveryTests {
    @Suite struct Worker {
        let pool: ConnectionPool
        let tenant: UUID
        let database: String

        init() throws {
            database = try TestDatabase.makeScratch()
            let setup = try TestDatabase.connect(database: database)
            tenant = try TenantStore().create(slug: "outbox-\(UUID().uuidString.prefix(8).lowercased())", name: "Outbox", registration: .open, on: setup).id
            pool = ConnectionPool(configuration: TestDatabase.configuration(database: database), options: .init(maxConnections: 6))
        }

        func finish() {
            pool.close()
            TestDatabase.dropScratch(database)
        }

        func enqueue(_ count: Int) async throws -> [UUID] {
            let tenant = self.tenant
            return try await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant) { connection in
                    try (0..<count).map { index in
                        try OutboxStore().enqueue(tenant: tenant, channel: .sms, recipient: "+4512345678", template: .invitation,
                                                  data: RawJSON(#"{"token":"secret-\#(index)","group_name":"Elm \"St\""}"#), on: connection)
                    }
                }
            }
        }

        func status(_ id: UUID) async throws -> (status: String, attempts: Int) {
            let tenant = self.tenant
            return try await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant) {
                    let row = try $0.query("SELECT status, attempts FROM outbox WHERE id = \(id)").rows[0]
                    return (try row.decode(String.self, "status"), try row.decode(Int.self, "attempts"))
                }
            }
        }

        /// Waits (bounded) until every row has left `pending`.
        func awaitSettled(_ ids: [UUID], timeout: Duration = .seconds(20)) async throws {
            try await Poll.until(within: timeout) {
                for id in ids where try await status(id).status == "pending" { return false }
                return true
            }
        }

        func worker(sinkPort: UInt16, secret: String?, maxAttempts: Int = 6) -> OutboxWorker {
            var options = OutboxWorker.Options()
            options.baseBackoffSeconds = 0.02
            options.pollIntervalMilliseconds = 10
            options.maxAttempts = maxAttempts
            return OutboxWorker(pool: pool, mode: .webhook(url: URL(string: "http://127.0.0.1:\(sinkPort)/sink")!, secret: secret),
                                options: options, log: Log(level: .error))
        }

        @Test func aSinkThatFailsThreeTimesGetsTheDeliveryExactlyOnceSigned() async throws {
            let sink = WebhookSink(failures: 3)
            let server = try TestServer(extraRoutes: { sink.route(&$0) })
            let ids = try await enqueue(1)
            let worker = worker(sinkPort: server.port, secret: sink.secret)
            worker.start()
            try await awaitSettled(ids)
            await worker.stop()
            let id = ids[0].uuidString.lowercased()
            #expect(try await status(ids[0]) == ("delivered", 4))
            #expect(sink.acceptedCount(id) == 1)
            #expect(sink.received.filter { $0.id == id }.count == 4)
            #expect(sink.received.allSatisfy { $0.signatureValid })
            // The sink got the token; the row keeps nothing usable once delivered.
            #expect((sink.received.last?.object["data"] as? [String: Any])?["token"] as? String == "secret-0")
            let tenant = self.tenant
            let kept = try await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant) { try $0.query("SELECT data::text AS data FROM outbox WHERE id = \(ids[0])").rows[0].decode(String.self, "data") }
            }
            #expect(!kept.contains("secret-0") && kept.contains("group_name"))
            await server.stop()
            finish()
        }

        @Test func twoWorkersDeliverEachRowOnce() async throws {
            let sink = WebhookSink(failures: 0)
            let server = try TestServer(extraRoutes: { sink.route(&$0) })
            let ids = try await enqueue(40)
            let first = worker(sinkPort: server.port, secret: nil), second = worker(sinkPort: server.port, secret: nil)
            first.start()
            second.start()
            try await awaitSettled(ids)
            await first.stop()
            await second.stop()
            for id in ids {
                #expect(sink.acceptedCount(id.uuidString.lowercased()) == 1)
                #expect(try await status(id) == ("delivered", 1))
            }
            #expect(sink.received.count == 40)
            await server.stop()
            finish()
        }

        @Test func aDeliveryThatNeverSucceedsEndsFailedAfterItsAttempts() async throws {
            let sink = WebhookSink(failures: 100)
            let server = try TestServer(extraRoutes: { sink.route(&$0) })
            let ids = try await enqueue(1)
            let worker = worker(sinkPort: server.port, secret: nil, maxAttempts: 5)
            worker.start()
            try await awaitSettled(ids)
            await worker.stop()
            #expect(try await status(ids[0]) == ("failed", 5))
            let jobs = try await pool.withConnection { try $0.query("SELECT count(*) AS n FROM outbox_jobs WHERE outbox_id = \(ids[0])").rows[0].decode(Int.self, "n") }
            #expect(jobs == 0)
            await server.stop()
            finish()
        }

        @Test func aWorkerStoppedMidRetryLosesNothing() async throws {
            let sink = WebhookSink(failures: 2)
            let server = try TestServer(extraRoutes: { sink.route(&$0) })
            let ids = try await enqueue(1)
            let first = worker(sinkPort: server.port, secret: nil)
            first.start()
            #expect(try await Poll.until { try await status(ids[0]).attempts >= 1 })
            await first.stop()
            // A new worker (a restarted node) picks the row up where the first left it.
            let second = worker(sinkPort: server.port, secret: nil)
            second.start()
            try await awaitSettled(ids)
            await second.stop()
            #expect(try await status(ids[0]).status == "delivered")
            #expect(sink.acceptedCount(ids[0].uuidString.lowercased()) == 1)
            await server.stop()
            finish()
        }

        @Test func anUnreachableWebhookIsRetriedNotLost() async throws {
            let ids = try await enqueue(1)
            let worker = worker(sinkPort: 1, secret: nil, maxAttempts: 2)  // nothing listens on port 1
            worker.start()
            try await awaitSettled(ids)
            await worker.stop()
            #expect(try await status(ids[0]) == ("failed", 2))
            finish()
        }
    }
}

extension OutboxDeliveryTests {
    @Suite struct Fairness {
        @Test func oneTenantsTenThousandQueuedDeliveriesHardlyDelayAnotherTenantsCode() async throws {
            let database = try TestDatabase.makeScratch()
            defer { TestDatabase.dropScratch(database) }
            let setup = try TestDatabase.connect(database: database)
            let flooder = try TenantStore().create(slug: "flood-\(UUID().uuidString.prefix(8).lowercased())", name: "Flood", registration: .open, on: setup).id
            let quiet = try TenantStore().create(slug: "quiet-\(UUID().uuidString.prefix(8).lowercased())", name: "Quiet", registration: .open, on: setup).id
            // Ten thousand invitations queued by one tenant, all due now.
            try setup.withTenantTransaction(flooder) { connection in
                try connection.query("""
                    WITH queued AS (
                        INSERT INTO outbox (tenant_id, channel, recipient, template, data)
                        SELECT \(flooder), 'sms', '+4512345678', 'invitation', jsonb_build_object('token', 'flood-' || n)
                        FROM generate_series(1, 10000) n RETURNING id, tenant_id)
                    INSERT INTO outbox_jobs (outbox_id, tenant_id) SELECT id, tenant_id FROM queued
                    """)
            }
            let sink = WebhookSink(failures: 0)
            let server = try TestServer(extraRoutes: { sink.route(&$0) })
            let pool = ConnectionPool(configuration: TestDatabase.configuration(database: database), options: .init(maxConnections: 4))
            var options = OutboxWorker.Options()
            options.pollIntervalMilliseconds = 10
            let worker = OutboxWorker(pool: pool, mode: .webhook(url: URL(string: "http://127.0.0.1:\(server.port)/sink")!, secret: nil),
                                      options: options, log: Log(level: .error))
            worker.start()
            // The flood is being delivered; then the other tenant's code is queued.
            #expect(try await Poll.until(every: .milliseconds(5)) { sink.received.count >= 200 })
            let queuedAt = ContinuousClock.now
            try setup.withTenantTransaction(quiet) { connection in
                try OutboxStore().enqueue(tenant: quiet, channel: .email, recipient: "quiet@example.org", template: .verification,
                                          data: RawJSON(#"{"code":"123456"}"#), on: connection)
            }
            _ = try await sink.awaitDelivery(to: "quiet@example.org", template: "verification", timeout: .seconds(30))
            let waited = ContinuousClock.now - queuedAt
            let before = sink.received.count
            await worker.stop()
            await server.stop()
            pool.close()
            let delay = Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18
            print("outbox fairness: the quiet tenant's code arrived \(Int(delay * 1000)) ms after it was queued, behind 10,000 of another "
                  + "tenant's (\(before) of them delivered by then)")
            // It did not wait for the flood: most of the ten thousand were still queued.
            #expect(before < 5_000)
        }
    }
}
