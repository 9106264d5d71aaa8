import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// A large group's alert as one fanout job (sql/0032_fanouts.sql): the alert commits with one
/// job instead of a row per device, and the expansion queues each member's pushes exactly once,
/// a batch at a time, however many nodes expand it at once.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct FanoutTests {
    @Test func aLargeGroupsAlertIsExpandedOnceInBatchesEvenByTwoNodesAtOnce() async throws {
        let database = try TestDatabase.makeScratch()
        defer { TestDatabase.dropScratch(database) }
        let api = try APIFixture(database: database)
        let owner = try await api.person(email: "ann@example.org")
        let (_, created) = try await api.call("POST", "/v1/groups", ["name": "Elm Row"], token: owner.token)
        let group = try #require(created["id"] as? String)
        // 460 members: nine with no device (m451 to m459), one with pushes of red alerts turned
        // off (m1), 450 to push.
        try await api.inTenant { tenant, connection in
            try connection.query("""
                WITH made AS (
                    INSERT INTO users (tenant_id, email, display_name)
                    SELECT \(tenant), 'm' || n || '@example.org', 'M' || n FROM generate_series(1, 460) AS n RETURNING id, email),
                joined AS (
                    INSERT INTO memberships (tenant_id, group_id, user_id, role) SELECT \(tenant), \(UUID(uuidString: group)!), id, 'member' FROM made)
                INSERT INTO devices (tenant_id, user_id, platform, token)
                SELECT \(tenant), id, 'fcm', 'token-' || email FROM made WHERE email NOT LIKE 'm45_@%' OR email = 'm450@example.org'
                """)
            try connection.query("""
                INSERT INTO user_preferences (tenant_id, user_id, push_red)
                SELECT \(tenant), id, false FROM users WHERE email = 'm1@example.org'
                """)
        }
        let (status, _) = try await api.call("POST", "/v1/groups/\(group)/messages",
                                             ["client_msg_id": "fire", "text": "Fire at number 9", "kind": "alert", "severity": "red"], token: owner.token)
        #expect(status == 201)
        func count(_ sql: String) async throws -> Int {
            try await api.inTenant { _, connection in try connection.query("\(unsafeRaw: sql)").rows[0].decode(Int.self, "n") }
        }
        #expect(try await count("SELECT count(*) AS n FROM outbox WHERE channel = 'push'") == 0)
        #expect(try await count("SELECT count(*) AS n FROM fanout_jobs") == 1)

        // Two nodes expand it at once, 100 members a batch each: the batches take turns.
        let fanout = try #require(try await api.pool.withConnection { try OutboxStore().fanouts(limit: 1, on: $0) }.first)
        let tenant = fanout.tenant
        let pool = api.pool
        let expand: @Sendable () async throws -> Int = {
            var queued = 0
            while true {
                let step = try await pool.withConnection { connection in
                    try connection.withTenantTransaction(tenant) { try OutboxStore().expandFanout(fanout.id, members: 100, on: $0) }
                }
                queued += step.queued
                if step.done { return queued }
            }
        }
        async let first = expand()
        async let second = expand()
        let queued = try await first + second
        #expect(queued == 450)
        #expect(try await count("SELECT count(*) AS n FROM outbox WHERE channel = 'push'") == 450)
        #expect(try await count("SELECT count(DISTINCT recipient) AS n FROM outbox WHERE channel = 'push'") == 450)
        #expect(try await count("SELECT count(*) AS n FROM alert_recipients") == 450, "the receipts' pushed")
        #expect(try await count("SELECT count(*) AS n FROM outbox_jobs j JOIN outbox o ON o.id = j.outbox_id WHERE j.lane = 0") == 450)
        #expect(try await count("SELECT count(*) AS n FROM fanout_jobs") == 0)
        #expect(try await count("SELECT count(*) AS n FROM fanouts") == 0)
        await api.stop()
    }
}
