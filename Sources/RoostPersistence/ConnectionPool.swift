import Dispatch
import Foundation
import Synchronization

/// A bounded pool of PostgreSQL connections.
///
/// - At most `maxConnections` are open; a caller that finds none free waits in line until
///   its deadline, then gets `DatabaseError.unavailable` (the API's 503), never an unbounded queue.
///   Every waiter has the same timeout and joins at the back, so the line is in deadline order
///   and one timer, set for the front waiter's deadline, serves the whole line (a timer per
///   waiter lived, with its closure, for the whole timeout even after the waiter was served).
/// - A connection that broke while lent out is discarded on return and its slot reopened
///   lazily; an idle one is checked before it is lent, so a terminated backend or a restarted
///   server costs a reconnect, not a failed request.
/// - libpq calls block, so every use runs on the connection's own serial dispatch queue,
///   leaving Swift's cooperative threads (and the reactor) free; at most `maxConnections` such
///   jobs exist, each on its own thread.
public final class ConnectionPool: Sendable {
    public struct Options: Sendable {
        public var maxConnections: Int
        public var acquireTimeout: Duration
        /// What the waiting line's deadlines are read on (tests move a manual one).
        public var clock: any PoolClock
        public init(maxConnections: Int = 10, acquireTimeout: Duration = .seconds(5), clock: any PoolClock = SystemPoolClock()) {
            precondition(maxConnections > 0, "a pool needs at least one connection")
            self.maxConnections = maxConnections
            self.acquireTimeout = acquireTimeout
            self.clock = clock
        }
    }

    /// What a waiter is handed: a connection, or the right to open one in a free slot.
    private enum Grant: Sendable {
        case connection(PostgresConnection)
        case openSlot
    }

    private struct Waiter {
        let deadline: UInt64
        let continuation: CheckedContinuation<Grant, any Error>
    }

    private struct State {
        var idle: [PostgresConnection] = []
        var open = 0
        /// In joining order, which is deadline order.
        var waiters: [Waiter] = []
        /// The deadline the timer is set for, if it is set.
        var timerDeadline: UInt64?
        var isClosed = false
    }

    public let configuration: ConnectionConfiguration
    public let options: Options
    private let state = Mutex(State())
    /// The waiting line's one timer, set only with the state locked.
    private let timer: any PoolTimer
    private let expiry = Expiry()

    /// Whom the timer reaches: set once the pool exists (the timer is made before it).
    private final class Expiry: Sendable {
        let pool = Mutex<WeakPool?>(nil)
        struct WeakPool: @unchecked Sendable { weak var value: ConnectionPool? }  // a weak reference, read under the lock
    }

    public init(configuration: ConnectionConfiguration, options: Options = Options()) {
        self.configuration = configuration
        self.options = options
        let expiry = self.expiry
        timer = options.clock.makeTimer { expiry.pool.withLock { $0?.value }?.expireWaiters() }
        expiry.pool.withLock { $0 = Expiry.WeakPool(value: self) }
    }

    deinit {
        timer.cancel()
    }

    /// Lends a connection to `body`, run on the blocking queue, and takes it back afterwards.
    @discardableResult
    public func withConnection<Value: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> Value
    ) async throws -> Value {
        let connection = try await acquire()
        defer { release(connection) }
        return try await run(on: connection.workQueue) { try body(connection) }
    }

    /// One transaction on a pooled connection (see `PostgresConnection.withTransaction`).
    public func transaction<Value: Sendable>(
        isolation: IsolationLevel = .readCommitted,
        retries: Int = 0,
        _ body: @escaping @Sendable (PostgresConnection) throws -> Value
    ) async throws -> Value {
        try await withConnection { try $0.withTransaction(isolation: isolation, retries: retries, body) }
    }

    /// One transaction scoped to `tenant` by row-level security.
    public func tenantTransaction<Value: Sendable>(
        _ tenant: UUID,
        isolation: IsolationLevel = .readCommitted,
        retries: Int = 0,
        _ body: @escaping @Sendable (PostgresConnection) throws -> Value
    ) async throws -> Value {
        try await withConnection {
            try $0.withTenantTransaction(tenant, isolation: isolation, retries: retries, body)
        }
    }

    /// One statement outside an explicit transaction.
    @discardableResult
    public func query(_ query: SQLQuery) async throws -> PostgresResult {
        try await withConnection { try $0.query(query) }
    }

    /// Connections open and lent out, and callers waiting: for metrics and tests.
    public var statistics: (open: Int, inUse: Int, waiting: Int) {
        state.withLock { ($0.open, $0.open - $0.idle.count, $0.waiters.count) }
    }

    /// Closes idle connections and fails every waiter; lent connections close on return.
    public func close() {
        timer.cancel()
        let waiters = state.withLock { state -> [Waiter] in
            state.isClosed = true
            state.open -= state.idle.count
            state.idle.removeAll()
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters {
            waiter.continuation.resume(throwing: DatabaseError(.unavailable, "the connection pool is closed"))
        }
    }

    // MARK: - Lending

    private func acquire() async throws -> PostgresConnection {
        switch try await grant() {
        case .connection(let connection):
            if connection.isUsableWhenIdle { return connection }
            // Stale (backend terminated, server restarted): keep the slot, open afresh.
            return try await openConnection()
        case .openSlot:
            return try await openConnection()
        }
    }

    private func grant() async throws -> Grant {
        try await withCheckedThrowingContinuation { continuation in
            let immediate = state.withLock { state -> Result<Grant, DatabaseError>? in
                if state.isClosed { return .failure(DatabaseError(.unavailable, "the connection pool is closed")) }
                if let connection = state.idle.popLast() { return .success(.connection(connection)) }
                if state.open < options.maxConnections {
                    state.open += 1
                    return .success(.openSlot)
                }
                let deadline = options.clock.now() + options.acquireTimeout.nanoseconds
                state.waiters.append(Waiter(deadline: deadline, continuation: continuation))
                if state.timerDeadline == nil { setTimer(for: deadline, in: &state) }
                return nil
            }
            if let immediate { continuation.resume(with: immediate) }
        }
    }

    /// Sets the one timer; called with the state locked, so the deadline it records is the one set.
    private func setTimer(for deadline: UInt64, in state: inout State) {
        state.timerDeadline = deadline
        timer.schedule(at: deadline)
    }

    /// The timer fired: fails the waiters whose deadline has passed, from the front of the line,
    /// and sets the timer for the next one (waiters served meanwhile have left the line).
    private func expireWaiters() {
        let now = options.clock.now()
        let expired = state.withLock { state -> [Waiter] in
            state.timerDeadline = nil
            let due = Array(state.waiters.prefix { $0.deadline <= now })
            state.waiters.removeFirst(due.count)
            if let next = state.waiters.first, !state.isClosed { setTimer(for: next.deadline, in: &state) }
            return due
        }
        let timeout = options.acquireTimeout
        for waiter in expired {
            waiter.continuation.resume(
                throwing: DatabaseError(
                    .unavailable, "no database connection became free within \(timeout) (pool of \(options.maxConnections))"))
        }
    }

    /// Opens a connection in a slot already counted in `open`; gives the slot back on failure.
    private func openConnection() async throws -> PostgresConnection {
        let configuration = self.configuration
        do {
            // A fresh serial queue: connecting blocks for up to the connect timeout.
            return try await run(on: DispatchQueue(label: "roost.postgres.connect")) { try PostgresConnection.connect(configuration) }
        } catch {
            releaseSlot()
            throw error
        }
    }

    private func release(_ connection: PostgresConnection) {
        let (waiter, grant) = state.withLock { state -> (Waiter?, Grant?) in
            if connection.isBroken || state.isClosed {
                if !state.waiters.isEmpty, !state.isClosed {
                    return (state.waiters.removeFirst(), .openSlot)
                }
                state.open -= 1
                return (nil, nil)
            }
            if !state.waiters.isEmpty { return (state.waiters.removeFirst(), .connection(connection)) }
            state.idle.append(connection)
            return (nil, nil)
        }
        if let waiter, let grant { waiter.continuation.resume(returning: grant) }
    }

    private func releaseSlot() {
        let waiter = state.withLock { state -> Waiter? in
            if !state.waiters.isEmpty, !state.isClosed { return state.waiters.removeFirst() }
            state.open -= 1
            return nil
        }
        waiter?.continuation.resume(returning: .openSlot)
    }

    private func run<Value: Sendable>(
        on queue: DispatchQueue, _ work: @escaping @Sendable () throws -> Value
    ) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result<Value, any Error> { try work() }) }
        }
    }
}
