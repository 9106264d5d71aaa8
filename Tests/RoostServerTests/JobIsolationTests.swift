import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Testing

/// Background jobs fail alone (issue: hostile users): nothing a client sends collides with what
/// the server writes for itself, and a job that fails is retried, parked, and holds up nobody.
/// Each test runs on a database of its own, so no other test's scheduler takes its deadlines.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct JobIsolationTests {
    /// A tenant with a group, its owner and a walker, on a scratch database.
    struct Neighbourhood {
        let tenant: UUID
        let group: UUID
        let owner: UUID
        let walker: UUID
    }

    static func neighbourhood(_ slug: String, on connection: PostgresConnection) throws -> Neighbourhood {
        let tenant = try TenantStore().create(slug: slug, name: "Job tests", registration: .open, on: connection).id
        return try connection.withTenantTransaction(tenant) { connection in
            let owner = try UserStore().create(tenant: tenant, email: "owner@\(slug).example", phone: nil, passwordHash: "x", displayName: "Owner", on: connection)
            let walker = try UserStore().create(tenant: tenant, email: "walker@\(slug).example", phone: nil, passwordHash: "x", displayName: "Walker", on: connection)
            let group = try GroupStore().create(tenant: tenant, owner: owner.id, name: "Lane", description: "", on: connection)
            try connection.query("INSERT INTO memberships (tenant_id, group_id, user_id, role) VALUES (\(tenant), \(group.id), \(walker.id), 'member')")
            return Neighbourhood(tenant: tenant, group: group.id, owner: owner.id, walker: walker.id)
        }
    }

    /// A check-in of the walker, already due.
    static func dueCheckin(_ place: Neighbourhood, note: String = "", on connection: PostgresConnection) throws -> UUID {
        try connection.withTenantTransaction(place.tenant) { connection in
            let checkin = try CheckinStore().create(tenant: place.tenant, user: place.walker, NewCheckin(
                groups: [place.group], note: note, location: nil, battery: nil, dueInSeconds: 0, graceSeconds: 0, destination: nil,
                stallAfterSeconds: nil), on: connection)
            try CheckinStore().schedule(checkin.id, tenant: place.tenant, at: checkin.dueAt, on: connection)
            return checkin.id
        }
    }

    static func status(_ checkin: UUID, _ place: Neighbourhood, on connection: PostgresConnection) throws -> String {
        try connection.withTenantTransaction(place.tenant) {
            try $0.query("SELECT status FROM checkins WHERE id = \(checkin)").rows[0].decode(String.self, "status")
        }
    }

    @Test func aChatMessageWhoseClientIDCopiesTheSchedulersKeyPoisonsNothing() async throws {
        try await TestDatabase.withScratchDatabaseAsync { database in
            let connection = try TestDatabase.connect(database: database)
            try Migrator(migrations: Migration.load(from: TestDatabase.migrationsDirectory)).run(on: connection)
            let mine = try Self.neighbourhood("poisoned", on: connection)
            let theirs = try Self.neighbourhood("bystander", on: connection)
            let own = try Self.dueCheckin(mine, note: "walking home", on: connection)
            let other = try Self.dueCheckin(theirs, on: connection)
            // The attacker posts a chat message under the key the scheduler used to post with.
            try connection.withTenantTransaction(mine.tenant) { connection in
                _ = try MessageStore().post(tenant: mine.tenant, group: mine.group, authorType: .user, authorID: mine.walker, authorName: "Walker",
                                            message: NewMessage(clientMessageID: "checkin:\(own.uuidString.lowercased())", text: "hi", kind: .chat,
                                                                severity: nil, template: nil, location: nil, replyTo: nil), on: connection)
            }
            let pool = ConnectionPool(configuration: TestDatabase.configuration(database: database), options: .init(maxConnections: 2, clock: ManualPoolClock()))
            let metrics = JobMetrics()
            let raised = try await DeadlineScheduler(pool: pool, log: Log(level: .error), metrics: metrics).runOnce()
            pool.close()
            #expect(raised == 2)
            #expect(try Self.status(own, mine, on: connection) == "missed")
            #expect(try Self.status(other, theirs, on: connection) == "missed")
            #expect(metrics.failures(.checkinDeadline) == 0)
        }
    }

    @Test func aJobThatAlwaysFailsIsParkedWhileAHundredOtherDeadlinesInTwoTenantsFireOnTime() async throws {
        try await TestDatabase.withScratchDatabaseAsync { database in
            let connection = try TestDatabase.connect(database: database)
            try Migrator(migrations: Migration.load(from: TestDatabase.migrationsDirectory)).run(on: connection)
            let broken = try Self.neighbourhood("broken", on: connection)
            let places = [try Self.neighbourhood("north", on: connection), try Self.neighbourhood("south", on: connection)]
            // A real fault in the real database: every alert into the broken group is refused.
            try connection.run(script: """
                CREATE FUNCTION refuse_alerts() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'injected fault: this group refuses alerts'; END $$;
                CREATE TRIGGER refuse_alerts BEFORE INSERT ON messages FOR EACH ROW
                    WHEN (NEW.group_id = '\(broken.group.uuidString.lowercased())') EXECUTE FUNCTION refuse_alerts();
                """)
            let poisoned = try Self.dueCheckin(broken, on: connection)
            var others: [UUID] = []
            for index in 0..<100 { others.append(try Self.dueCheckin(places[index % 2], on: connection)) }
            // All due at once, the failing one a moment earlier, so it is claimed first.
            try connection.query("UPDATE checkin_deadlines SET due_at = now() - interval '1 second' WHERE checkin_id = \(poisoned)")
            for place in places {
                try connection.withTenantTransaction(place.tenant) { connection in
                    try connection.query("UPDATE checkins SET due_at = now()")
                    try connection.query("UPDATE checkin_deadlines SET due_at = now() WHERE tenant_id = \(place.tenant)")
                }
            }

            let pool = ConnectionPool(configuration: TestDatabase.configuration(database: database), options: .init(maxConnections: 3, clock: ManualPoolClock()))
            let metrics = JobMetrics()
            // A failed job waits minutes before its retry unless the test moves it (below), so on a
            // machine however slow it is still being retried when the others have fired. The pools'
            // clocks stand still: on a busy machine a job kept 5 s waiting for one of three
            // connections would fail, and come back minutes later, though nothing was wrong.
            let scheduler = DeadlineScheduler(pool: pool, log: Log(level: .error), metrics: metrics, maxAttempts: 4, intervalMilliseconds: 20,
                                              baseBackoffSeconds: 300)
            func parked() throws -> [ParkedJob] { try JobStore().parked(limit: 10, on: connection) }
            scheduler.start()
            // The status is polled through a pool of the test's own, so the test never holds a
            // thread the scheduler needs (libpq calls block).
            let setup = ConnectionPool(configuration: TestDatabase.configuration(database: database), options: .init(maxConnections: 1, clock: ManualPoolClock()))
            // Every other deadline fires; lateness is the time from its deadline to its alert's event.
            #expect(others.count == 100)
            let fired = try await Poll.until(within: .seconds(300)) {
                var active = 0
                for place in places {
                    active += try await setup.withConnection { connection in
                        try connection.withTenantTransaction(place.tenant) {
                            try $0.query("SELECT count(*) AS n FROM checkins WHERE status = 'active'").rows[0].decode(Int.self, "n")
                        }
                    }
                }
                return active == 0
            }
            setup.close()
            #expect(fired, "not every one of the 100 deadlines fired")
            var lateness: [Double] = []
            for place in places {
                lateness += try connection.withTenantTransaction(place.tenant) {
                    try $0.query("""
                        SELECT extract(epoch FROM e.created_at - c.due_at)::float8 AS late FROM checkins c
                        JOIN group_events e ON e.tenant_id = c.tenant_id AND e.group_id = c.group_id AND e.seq = c.alert_seq
                        """).rows.map { try $0.decode(Double.self, "late") }
                }
            }
            lateness.sort()
            print("job isolation: 100 deadlines beside a failing job fired with lateness p50 \(Int(lateness[lateness.count / 2] * 1000)) ms, "
                  + "p99 \(Int(lateness[min(lateness.count - 1, lateness.count * 99 / 100)] * 1000)) ms, max \(Int(lateness.last! * 1000)) ms")
            #expect(lateness.count == 100)
            // They fired while the failing job was still being retried: it held none of them up.
            #expect(try parked().isEmpty)

            // Its retries come after a backoff (minutes here); the clock is moved by hand, as
            // time would, until it is parked after its fourth try.
            try await Poll.until {
                try connection.query("UPDATE checkin_deadlines SET due_at = now() WHERE checkin_id = \(poisoned) AND parked_at IS NULL")
                return try !parked().isEmpty
            }
            await scheduler.stop()
            pool.close()
            let parkedJobs = try parked()
            #expect(parkedJobs.map(\.id) == [poisoned] && parkedJobs.first?.kind == "checkin_deadline" && parkedJobs.first?.attempts == 4)
            #expect(parkedJobs.first?.lastError?.contains("injected fault") == true)
            #expect(metrics.failures(.checkinDeadline) == 4)
            #expect(metrics.render().contains(#"roost_job_failures_total{kind="checkin_deadline"} 4"#))
            #expect(try Self.status(poisoned, broken, on: connection) == "active")

            // The operator fixes the fault and retries: it fires.
            try connection.run(script: "DROP TRIGGER refuse_alerts ON messages")
            #expect(try JobStore().retry(.checkinDeadline, id: poisoned, on: connection))
            #expect(try !JobStore().retry(.checkinDeadline, id: poisoned, on: connection))
            let again = ConnectionPool(configuration: TestDatabase.configuration(database: database), options: .init(maxConnections: 1, clock: ManualPoolClock()))
            #expect(try await DeadlineScheduler(pool: again, log: Log(level: .error)).runOnce() == 1)
            again.close()
            #expect(try Self.status(poisoned, broken, on: connection) == "missed")
        }
    }
}
