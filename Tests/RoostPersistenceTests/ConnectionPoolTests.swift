import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct ConnectionPoolTests {
    private func makePool(size: Int, timeout: Duration, name: String = "roost-pool-\(UUID().uuidString.prefix(8))")
        -> ConnectionPool
    {
        ConnectionPool(
            configuration: TestDatabase.configuration(applicationName: name),
            options: .init(maxConnections: size, acquireTimeout: timeout))
    }

    /// A pool whose waiters never time out: its clock stands still. For the tests about
    /// something other than the deadline (the bound, a hand-over, a lost backend), so a machine
    /// busy enough to keep a waiter in line for 20 s changes nothing. (With the system clock,
    /// 30 callers sharing 3 connections failed a fresh-clone CI run so: "no database connection
    /// became free within 20.0 seconds".)
    private func makeUntimedPool(size: Int, name: String = "roost-pool-\(UUID().uuidString.prefix(8))") -> ConnectionPool {
        ConnectionPool(
            configuration: TestDatabase.configuration(applicationName: name),
            options: .init(maxConnections: size, acquireTimeout: .seconds(1), clock: ManualPoolClock()))
    }

    /// Lends the pool's connection to a holder that keeps it until `release` is signalled.
    private func hold(_ pool: ConnectionPool, until release: DispatchSemaphore) async -> Task<Void, any Error> {
        let holder = Task { try await pool.withConnection { _ in release.wait() } }
        while pool.statistics.inUse < 1 { await Task.yield() }
        return holder
    }

    @Test func anExhaustedPoolFailsWithUnavailableAtTheDeadline() async throws {
        let pool = makePool(size: 1, timeout: .milliseconds(300))
        defer { pool.close() }
        let release = DispatchSemaphore(value: 0)
        let holder = await hold(pool, until: release)
        let started = ContinuousClock.now
        await #expect {
            try await pool.query("SELECT 1")
        } throws: { error in
            (error as? DatabaseError)?.code == .unavailable
        }
        #expect(ContinuousClock.now - started >= .milliseconds(250))
        #expect(pool.statistics.waiting == 0)
        release.signal()
        try await holder.value
        // The pool is whole again.
        #expect(try await pool.query("SELECT 1 AS n").rows[0].decode(Int.self, "n") == 1)
    }

    /// One timer serves the whole line: each waiter fails at its own deadline, so the later
    /// joiner fails after the earlier one and not before its own timeout; and a waiter served
    /// before its deadline is not failed when the timer set for it fires. On a manual clock:
    /// time moves only when the test says, so a busy machine changes nothing.
    @Test func eachWaiterInLineFailsAtItsOwnDeadline() async throws {
        let clock = ManualPoolClock()
        let pool = ConnectionPool(configuration: TestDatabase.configuration(applicationName: "roost-pool-line"),
                                  options: .init(maxConnections: 1, acquireTimeout: .seconds(2), clock: clock))
        defer { pool.close() }
        let release = DispatchSemaphore(value: 0)
        let holder = await hold(pool, until: release)
        /// Whether the waiter gave up (true) or was served (false).
        func waiter() -> Task<Bool, Never> {
            Task {
                do { _ = try await pool.query("SELECT 1") } catch { return (error as? DatabaseError)?.code == .unavailable }
                return false
            }
        }
        let first = waiter()
        while pool.statistics.waiting < 1 { await Task.yield() }
        clock.advance(by: .seconds(1))  // the second joins half a timeout later
        let second = waiter()
        while pool.statistics.waiting < 2 { await Task.yield() }
        clock.advance(by: .milliseconds(999))
        #expect(pool.statistics.waiting == 2, "nobody fails before their deadline")
        clock.advance(by: .milliseconds(1))
        #expect(await first.value)
        #expect(pool.statistics.waiting == 1, "the later joiner is not failed at the earlier one's deadline")
        clock.advance(by: .milliseconds(999))
        #expect(pool.statistics.waiting == 1)
        clock.advance(by: .milliseconds(1))
        #expect(await second.value)
        #expect(pool.statistics.waiting == 0)

        // A waiter served before its deadline: the timer set for it finds nobody to fail.
        let served = Task { try await pool.query("SELECT 5 AS n").rows[0].decode(Int.self, "n") }
        while pool.statistics.waiting < 1 { await Task.yield() }
        release.signal()
        try await holder.value
        #expect(try await served.value == 5)
        clock.advance(by: .seconds(3))
        #expect(try await pool.query("SELECT 6 AS n").rows[0].decode(Int.self, "n") == 6)
    }

    @Test func aWaiterGetsTheConnectionWhenItIsReturned() async throws {
        let pool = makeUntimedPool(size: 1)
        defer { pool.close() }
        let release = DispatchSemaphore(value: 0)
        let holder = await hold(pool, until: release)
        let waiter = Task { try await pool.query("SELECT 7 AS n").rows[0].decode(Int.self, "n") }
        while pool.statistics.waiting < 1 { await Task.yield() }
        release.signal()
        #expect(try await waiter.value == 7)
        try await holder.value
        #expect(pool.statistics.open == 1)
    }

    /// Every connection's blocking work really runs at once: ten bodies meet at a barrier that
    /// opens only when all ten are inside it, which a pool running them on a capped queue never
    /// lets happen. The bound is no budget: the first body in waits for the tenth connection to
    /// open, which a busy machine can take seconds over. (A concurrent dispatch queue, growing by
    /// about a thread a second, took 8 s to let them meet: slowness of that kind shows in
    /// `scripts/bench`'s post figures, not here.)
    @Test func allConnectionsCanBeBusyAtOnce() async throws {
        let pool = makeUntimedPool(size: 10)
        defer { pool.close() }
        let barrier = Barrier(parties: 10)
        let met = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    try await pool.withConnection { connection in
                        try connection.query("SELECT 1")
                        return barrier.arriveAndWait(timeout: .seconds(60))
                    }
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(met == Array(repeating: true, count: 10))
    }

    @Test func thePoolNeverOpensMoreThanItsBound() async throws {
        let pool = makeUntimedPool(size: 3)
        defer { pool.close() }
        let pids = try await withThrowingTaskGroup(of: Int32.self) { group in
            for _ in 0..<30 {
                group.addTask {
                    try await pool.withConnection { connection in
                        try connection.query("SELECT pg_sleep(0.02)")
                        return connection.backendPID
                    }
                }
            }
            return try await group.reduce(into: Set<Int32>()) { $0.insert($1) }
        }
        #expect(pids.count <= 3)
        #expect(pool.statistics.open <= 3)
    }

    @Test func terminatingEveryBackendDoesNotBreakTheNextQuery() async throws {
        let name = "roost-kill-\(UUID().uuidString.prefix(8))"
        let pool = makeUntimedPool(size: 2, name: name)
        defer { pool.close() }
        // Open both connections.
        async let a = pool.query("SELECT pg_sleep(0.1)")
        async let b = pool.query("SELECT pg_sleep(0.1)")
        _ = try await (a, b)
        #expect(pool.statistics.open == 2)

        let admin = try TestDatabase.connect()
        // The timeout form waits until each backend has really exited.
        let killed = try admin.query("""
            SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) AS n
            FROM pg_stat_activity WHERE application_name = \(name)
            """).rows[0].decode(Int.self, "n")
        #expect(killed == 2)

        for _ in 0..<4 {
            let one = try await pool.query("SELECT 1 AS one").rows[0].decode(Int.self, "one")
            #expect(one == 1)
        }
    }

    @Test func aConnectionLostInUseIsReportedAndReplaced() async throws {
        let name = "roost-lost-\(UUID().uuidString.prefix(8))"
        let pool = makeUntimedPool(size: 1, name: name)
        defer { pool.close() }
        await #expect {
            try await pool.withConnection { connection in
                // The backend terminates itself mid-query.
                try connection.query("SELECT pg_terminate_backend(pg_backend_pid())")
            }
        } throws: { error in
            (error as? DatabaseError)?.code == .connectionLost
        }
        #expect(try await pool.query("SELECT 2 AS n").rows[0].decode(Int.self, "n") == 2)
        #expect(pool.statistics.open == 1)
    }

    @Test func aConnectionThatFindsAStandbyIsReportedAsLostAndReplaced() async throws {
        // After a switchover a pooled connection can sit on a server that is now a standby; its
        // write fails with 25006. That is the database being away (503), not a bug (500), and the
        // connection goes, so the next one (libpq, target_session_attrs=read-write) finds the primary.
        let name = "roost-standby-\(UUID().uuidString.prefix(8))"
        let pool = makeUntimedPool(size: 1, name: name)
        defer { pool.close() }
        let firstPID = try await pool.withConnection { $0.backendPID }
        await #expect {
            try await pool.withConnection { connection in
                try connection.run(script: "SET default_transaction_read_only = on")
                try connection.withTransaction { try $0.query("CREATE TEMPORARY TABLE roost_standby_probe (n int)") }
            }
        } throws: { error in
            (error as? DatabaseError).map { $0.code == .connectionLost && $0.sqlState == "25006" } == true
        }
        let secondPID = try await pool.withConnection { $0.backendPID }
        #expect(secondPID != firstPID)
    }

    @Test func anUnreachableServerIsItsOwnError() async throws {
        let pool = ConnectionPool(
            configuration: .init(connectionString: "postgresql:///roost?host=/nonexistent-roost-socket&port=1"),
            options: .init(maxConnections: 1, acquireTimeout: .seconds(1)))
        defer { pool.close() }
        await #expect {
            try await pool.query("SELECT 1")
        } throws: { error in
            let error = error as? DatabaseError
            return error?.code == .unreachable && error!.isConnectionFailure
        }
        // The failed attempt gave its slot back.
        #expect(pool.statistics.open == 0)
    }

    @Test func aMalformedConnectionStringIsRefusedBeforeConnecting() throws {
        #expect {
            try ConnectionConfiguration(connectionString: "postgres://[::1:bad").validate()
        } throws: { error in
            (error as? DatabaseError)?.code == .invalidConnectionString
        }
        #expect {
            try ConnectionConfiguration(connectionString: "host=x nonsense_option=1").validate()
        } throws: { error in
            (error as? DatabaseError)?.code == .invalidConnectionString
        }
    }

    @Test(.enabled(if: ScratchCluster.binDirectory != nil, "needs PostgreSQL's server binaries"))
    func thePoolRecoversAfterPostgreSQLRestarts() async throws {
        let cluster = try await ScratchCluster()
        let pool = ConnectionPool(configuration: cluster.configuration, options: .init(maxConnections: 2, acquireTimeout: .seconds(5)))
        defer { pool.close() }
        let before = try await pool.withConnection { $0.backendPID }

        try await cluster.stop()
        await #expect {
            try await pool.query("SELECT 1")
        } throws: { error in
            (error as? DatabaseError)?.isConnectionFailure == true
        }

        try await cluster.start()
        let after = try await pool.withConnection { $0.backendPID }
        #expect(after != before)
        #expect(try await pool.query("SELECT 3 AS n").rows[0].decode(Int.self, "n") == 3)
        try await cluster.stop()  // here rather than in its deinit, which cannot wait off this thread
    }
}

/// A one-shot barrier for threads: `arriveAndWait` returns true once all parties have arrived.
final class Barrier: Sendable {
    private let remaining: Mutex<Int>
    private let open = DispatchSemaphore(value: 0)
    private let parties: Int

    init(parties: Int) {
        self.parties = parties
        remaining = Mutex(parties)
    }

    func arriveAndWait(timeout: Duration) -> Bool {
        let last = remaining.withLock { count -> Bool in
            count -= 1
            return count == 0
        }
        if last { for _ in 0..<parties { open.signal() } }
        return open.wait(timeout: .now() + timeout.timeInterval) == .success
    }
}

import Synchronization

extension Duration {
    var timeInterval: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
