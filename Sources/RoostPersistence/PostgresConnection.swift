import CLibPQ
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One libpq connection. Calls block the calling thread, so they run on the pool's blocking
/// executor, never on a reactor thread or a cooperative task thread.
///
/// `@unchecked Sendable`: the pool lends a connection to exactly one holder at a time, and
/// libpq's handle is used only by that holder; nothing else touches `handle` or `isBroken`.
public final class PostgresConnection: @unchecked Sendable {
    let handle: OpaquePointer
    /// Where the pool runs this connection's blocking calls: a serial queue of its own runs on
    /// libdispatch's overcommit threads, so ten connections can all wait on PostgreSQL at once
    /// (a concurrent queue would be capped near one thread per core on Linux).
    let workQueue = DispatchQueue(label: "roost.postgres.connection")
    /// Set once a call finds the connection unusable; the pool then discards it.
    public private(set) var isBroken = false
    /// Statements prepared on this connection, by SQL text: each is parsed once and then only
    /// bound and executed (a post runs a handful of statements; parsing each every time cost
    /// PostgreSQL more CPU than executing it).
    private var prepared: [PreparedKey: String] = [:]
    static let maxPrepared = 512
    /// Set by `queryAndCommit` while the body of the transaction it ended runs on: the
    /// transaction's own COMMIT is then skipped, and any further statement refused.
    var committedEarly = false

    private init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        PQfinish(handle)
    }

    /// Opens a connection (blocking, bounded by the connect timeout) and fixes the session
    /// settings the decoders rely on.
    public static func connect(_ configuration: ConnectionConfiguration) throws -> PostgresConnection {
        try configuration.validate()
        let pairs = configuration.keywordsAndValues
        let keywords = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        var keywordPointers = keywords.map { UnsafePointer<CChar>($0) } + [nil]
        var valuePointers = values.map { UnsafePointer<CChar>($0) } + [nil]
        guard let handle = PQconnectdbParams(&keywordPointers, &valuePointers, 1) else {
            throw DatabaseError(.unreachable, "libpq could not allocate a connection")
        }
        let connection = PostgresConnection(handle: handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            throw DatabaseError(
                .unreachable,
                "cannot connect to PostgreSQL: \(connection.lastErrorMessage)",
                hint: "check that PostgreSQL is running and that DATABASE_URL names the right host, port, user and database")
        }
        // The notice processor would otherwise print every NOTICE to stderr.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        // Timestamps are parsed as ISO text in UTC; see PostgresTimestamp.
        try connection.run(script: "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'iso_8601'")
        return connection
    }

    /// Runs one parameterised statement and copies its rows out.
    @discardableResult
    public func query(_ query: SQLQuery) throws -> PostgresResult {
        try refuseAfterEarlyCommit()
        try validate(query)
        let name = try statementName(query)
        return try consume(withParameters(query) { count, types, values, lengths, formats in
            if let name { return PQexecPrepared(handle, name, count, values, lengths, formats, 0) }
            return PQexecParams(handle, query.sql, count, types, values, lengths, formats, 0)
        })
    }

    /// Runs `queries` in one round trip (libpq's pipeline mode: all are sent, then one Sync)
    /// and returns their results in order. When one fails, PostgreSQL runs none after it; its
    /// error is thrown once every answer has been read, so the connection is ready again. A
    /// transaction begun by one of them stays open after the call, as with `query`.
    public func pipeline(_ queries: [SQLQuery]) throws -> [PostgresResult] {
        let outcome = try pipeline(segments: [queries])[0]
        if let failure = outcome.failure { throw failure }
        return outcome.results
    }

    /// What one segment of a pipeline came back with: the results of the statements that ran
    /// before any failed, and the failure, if one did (PostgreSQL then skipped the rest).
    struct PipelineOutcome {
        var results: [PostgresResult] = []
        var failure: DatabaseError?
    }

    /// Runs `segments` in one round trip, a Sync after each: a statement that fails skips the
    /// rest of its own segment only, so a later segment runs whatever became of an earlier one
    /// (PostgreSQL ends an implicit transaction at each Sync). Throws only when the link to the
    /// server fails; a statement's error is in its segment's outcome.
    func pipeline(segments: [[SQLQuery]]) throws -> [PipelineOutcome] {
        try refuseAfterEarlyCommit()
        // Preparing blocks, which pipeline mode forbids: every statement is prepared first.
        let names = try segments.map { queries in
            try queries.map { query in
                try validate(query)
                return try statementName(query)
            }
        }
        guard PQenterPipelineMode(handle) == 1 else {
            throw DatabaseError(.client, "libpq could not enter pipeline mode: \(lastErrorMessage)")
        }
        for (queries, segmentNames) in zip(segments, names) {
            for (query, name) in zip(queries, segmentNames) {
                let sent = withParameters(query) { count, types, values, lengths, formats in
                    if let name { return PQsendQueryPrepared(handle, name, count, values, lengths, formats, 0) }
                    return PQsendQueryParams(handle, query.sql, count, types, values, lengths, formats, 0)
                }
                guard sent == 1 else { throw lostInPipeline() }
            }
            guard PQpipelineSync(handle) == 1 else { throw lostInPipeline() }
        }
        var outcomes: [PipelineOutcome] = []
        for queries in segments {
            var outcome = PipelineOutcome()
            for _ in queries {
                // Each statement's one result, then the null that ends it.
                guard let result = PQgetResult(handle) else { throw lostInPipeline() }
                switch PQresultStatus(result) {
                case PGRES_TUPLES_OK, PGRES_COMMAND_OK: outcome.results.append(copyRows(result))
                case PGRES_PIPELINE_ABORTED: break  // not run: an earlier statement failed
                default: outcome.failure = outcome.failure ?? error(from: result)
                }
                PQclear(result)
                if let extra = PQgetResult(handle) {
                    PQclear(extra)
                    throw lostInPipeline()
                }
            }
            guard let sync = PQgetResult(handle) else { throw lostInPipeline() }
            let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
            PQclear(sync)
            guard synced else { throw lostInPipeline() }
            outcomes.append(outcome)
        }
        guard PQexitPipelineMode(handle) == 1 else { throw lostInPipeline() }
        return outcomes
    }

    /// A pipeline out of step with libpq (a send failed, the link dropped, or an answer came
    /// that was not expected): the connection is not used again.
    private func lostInPipeline() -> DatabaseError {
        isBroken = true
        return DatabaseError(.connectionLost, "the database connection failed in a pipeline: \(lastErrorMessage)")
    }

    /// Refuses a query whose parameters could not be encoded or hold a NUL, before anything is sent.
    private func validate(_ query: SQLQuery) throws {
        if let failure = query.encodingFailure {
            throw DatabaseError(.client, "a query parameter could not be encoded: \(failure)")
        }
        let binds = query.binds
        // libpq takes C strings: a NUL would silently cut the value short, so refuse it.
        if let index = binds.firstIndex(where: { $0.text?.utf8.contains(0) == true }) {
            throw DatabaseError(
                .characterNotInRepertoire, "parameter $\(index + 1) contains a NUL character, which PostgreSQL text cannot hold")
        }
    }

    /// Calls `body` with `query`'s parameters as libpq takes them: count, types, values (C
    /// strings, or bytes for binary ones), lengths and formats (nil when all are text).
    private func withParameters<Result>(
        _ query: SQLQuery,
        _ body: (Int32, [Oid], [UnsafePointer<CChar>?], [Int32]?, [Int32]?) -> Result
    ) -> Result {
        let binds = query.binds
        let types = binds.map { $0.type.oid }
        // Text parameters as C strings; binary ones (bytea) as their bytes with a length.
        let texts: [UnsafeMutablePointer<CChar>?] = binds.map { bind in
            if let binary = bind.binary {
                let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, binary.count))
                binary.withUnsafeBytes { raw in if let base = raw.baseAddress { UnsafeMutableRawPointer(copy).copyMemory(from: base, byteCount: raw.count) } }
                return copy
            }
            return bind.text.map { strdup($0) } ?? nil
        }
        defer { for (bind, text) in zip(binds, texts) { if bind.binary != nil { text?.deallocate() } else { free(text) } } }
        let values = texts.map { UnsafePointer<CChar>($0) }
        let anyBinary = binds.contains { $0.binary != nil }
        let lengths: [Int32]? = anyBinary ? binds.map { Int32($0.binary?.count ?? 0) } : nil
        let formats: [Int32]? = anyBinary ? binds.map { $0.binary == nil ? 0 : 1 } : nil
        return body(Int32(binds.count), types, values, lengths, formats)
    }

    /// The name of `query` prepared on this connection, preparing it the first time; nil once
    /// the cache is full (then the statement runs unprepared). Keyed by its text as built, with
    /// its parameters' places unnumbered (`SQLQuery.template`: the numbers follow from the
    /// order), and parameter types.
    private func statementName(_ query: SQLQuery) throws -> String? {
        let types = query.binds.map { $0.type.oid }
        let key = PreparedKey(template: query.template, types: types)
        if let name = prepared[key] { return name }
        guard prepared.count < Self.maxPrepared else { return nil }
        let name = "roost_\(prepared.count)"
        _ = try consume(PQprepare(handle, name, query.sql, Int32(types.count), types))
        prepared[key] = name
        return name
    }

    /// A prepared statement's text and parameter types, as they are (no key text is built
    /// for each statement run).
    private struct PreparedKey: Hashable {
        let template: String
        let types: [UInt32]
    }

    /// Runs trusted SQL text with the simple query protocol: several statements, no parameters.
    /// Only for migration files and fixed session commands, never for anything holding a value.
    public func run(script: String) throws {
        try refuseAfterEarlyCommit()
        _ = try consume(PQexec(handle, script))
    }

    /// Runs `query` as the last statement of the open transaction and commits it, in one round
    /// trip (a pipeline of the two): for a use case that knows nothing follows, which saves
    /// COMMIT a round trip of its own. When `query` fails, nothing is committed and the
    /// transaction rolls back as usual. `withTransaction` then commits nothing more, and a
    /// statement sent after this one in the same transaction's body is refused: it would run
    /// outside the transaction.
    @discardableResult
    public func queryAndCommit(_ query: SQLQuery) throws -> PostgresResult {
        guard PQtransactionStatus(handle) == PQTRANS_INTRANS else {
            throw DatabaseError(.client, "queryAndCommit needs an open transaction (withTransaction's body)")
        }
        let results = try pipeline([query, "COMMIT"])
        committedEarly = true
        return results[0]
    }

    /// `queryAndCommit`, and then `afterwards` in a transaction of its own once the commit is
    /// done, still in the one round trip: a Sync between them, so `afterwards` runs whether
    /// or not the first two did (it must find out for itself, from what the session holds).
    /// Its failure cannot undo the commit, so it is not thrown: it comes back instead.
    @discardableResult
    public func queryAndCommit(_ query: SQLQuery, then afterwards: SQLQuery) throws -> (result: PostgresResult, afterwards: DatabaseError?) {
        guard PQtransactionStatus(handle) == PQTRANS_INTRANS else {
            throw DatabaseError(.client, "queryAndCommit needs an open transaction (withTransaction's body)")
        }
        let outcomes = try pipeline(segments: [[query, "COMMIT"], [afterwards]])
        // A failed statement leaves the transaction open and aborted (and `afterwards` refused
        // in it), for the caller's rollback; a failed COMMIT has ended it.
        if let failure = outcomes[0].failure { throw failure }
        committedEarly = true
        return (outcomes[0].results[0], outcomes[1].failure)
    }

    /// `queryAndCommit` when `committing` (the caller knows nothing follows), else `query`.
    @discardableResult
    public func query(_ query: SQLQuery, committing: Bool) throws -> PostgresResult {
        committing ? try queryAndCommit(query) : try self.query(query)
    }

    private func refuseAfterEarlyCommit() throws {
        guard committedEarly else { return }
        throw DatabaseError(.client, "a statement was sent after its transaction was committed with queryAndCommit")
    }

    /// Whether an idle connection can be lent again. A terminated backend or a restarted
    /// server leaves the socket readable (a FATAL message, then EOF). Pooled connections never
    /// LISTEN, so any input while idle means trouble: the check, which does not block, refuses it.
    var isUsableWhenIdle: Bool {
        guard !isBroken, PQstatus(handle) == CONNECTION_OK, PQtransactionStatus(handle) == PQTRANS_IDLE else {
            return false
        }
        let socket = PQsocket(handle)
        guard socket >= 0 else { return false }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 0
    }

    /// Marks the connection unusable, e.g. when a transaction's rollback itself failed.
    func markBroken() {
        isBroken = true
    }

    /// The server's process ID for this connection (`pg_backend_pid()`).
    public var backendPID: Int32 { PQbackendPID(handle) }

    /// libpq's last message on one line (it spreads some over several, indented with tabs).
    private var lastErrorMessage: String {
        String(cString: PQerrorMessage(handle))
            .split(whereSeparator: \.isWhitespace)
            .joined(separator: " ")
    }

    private func consume(_ result: OpaquePointer?) throws -> PostgresResult {
        guard let result else {
            isBroken = PQstatus(handle) != CONNECTION_OK
            throw DatabaseError(isBroken ? .connectionLost : .client, lastErrorMessage)
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            return copyRows(result)
        default:
            throw error(from: result)
        }
    }

    private func copyRows(_ result: OpaquePointer) -> PostgresResult {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        let columns = PostgresColumns(names: (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) })
        var rows: [PostgresRow] = []
        rows.reserveCapacity(rowCount)
        for row in 0..<Int32(rowCount) {
            var values: [String?] = []
            values.reserveCapacity(columnCount)
            for column in 0..<Int32(columnCount) {
                if PQgetisnull(result, row, column) == 1 {
                    values.append(nil)
                } else {
                    let length = Int(PQgetlength(result, row, column))
                    let bytes = UnsafeRawPointer(PQgetvalue(result, row, column)!)
                    values.append(String(decoding: UnsafeRawBufferPointer(start: bytes, count: length), as: UTF8.self))
                }
            }
            rows.append(PostgresRow(columns: columns, values: values))
        }
        let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        return PostgresResult(rows: rows, affectedRows: affected)
    }

    /// Errors after which this connection must not be lent again, whatever libpq's status
    /// says yet: the server is shutting down or restarting (57P01–57P03), the link failed
    /// (class 08), or the server turned out to be a standby (25006, after a failover or a
    /// switchover demoted it), where a fresh connection finds the new primary (a multi-host
    /// URL with `target_session_attrs=read-write`).
    static func endsTheSession(_ sqlState: String) -> Bool {
        sqlState.hasPrefix("57P0") || sqlState.hasPrefix("08") || sqlState == "25006"
    }

    private func error(from result: OpaquePointer) -> DatabaseError {
        func field(_ code: Character) -> String? {
            guard let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        let sqlState = field("C")
        let message = field("M") ?? String(cString: PQresultErrorMessage(result)).trimmingWhitespace()
        if PQstatus(handle) != CONNECTION_OK || sqlState.map(Self.endsTheSession) == true {
            isBroken = true
            return DatabaseError(.connectionLost, "the database connection was lost: \(message)", sqlState: sqlState)
        }
        return DatabaseError(
            sqlState.map(DatabaseError.Code.init) ?? .client,
            message,
            detail: field("D"),
            hint: field("H"),
            constraint: field("n"),
            table: field("t"),
            column: field("c"),
            sqlState: sqlState)
    }
}
