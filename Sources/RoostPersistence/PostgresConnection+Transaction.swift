import Foundation
import RoostProtocol

/// Transaction isolation levels Roost uses (PostgreSQL "SET TRANSACTION").
public struct IsolationLevel: Hashable, Sendable {
    let sql: String
    public static let readCommitted = IsolationLevel(sql: "READ COMMITTED")
    public static let repeatableRead = IsolationLevel(sql: "REPEATABLE READ")
    public static let serializable = IsolationLevel(sql: "SERIALIZABLE")
}

extension PostgresConnection {
    /// Runs `body` in one transaction: commit when it returns, roll back when it throws.
    ///
    /// With `retries > 0`, a serialization failure or deadlock (SQLSTATE class 40) anywhere in
    /// the transaction, commit included, runs `body` again from the start, up to that many
    /// more times. `body` must then have no effects outside the database.
    @discardableResult
    public func withTransaction<Result>(
        isolation: IsolationLevel = .readCommitted,
        retries: Int = 0,
        _ body: (PostgresConnection) throws -> Result
    ) throws -> Result {
        try withTransaction(retries: retries, begin: { try $0.run(script: "BEGIN ISOLATION LEVEL \(isolation.sql)") }, body)
    }

    /// `begin` opens the transaction (it may run more than BEGIN: whatever it runs is inside).
    private func withTransaction<Result>(
        retries: Int, begin: (PostgresConnection) throws -> Void, _ body: (PostgresConnection) throws -> Result
    ) throws -> Result {
        var attempt = 0
        while true {
            do {
                return try runTransactionOnce(begin: begin, body)
            } catch let error as DatabaseError where error.isRetryableTransactionFailure && attempt < retries {
                attempt += 1
            }
        }
    }

    /// A transaction in which row-level security sees only `tenant`'s rows. The tenant is set
    /// with `SET LOCAL` in the same round trip as `BEGIN` (a UUID's text is hex and dashes only,
    /// so it is safe to write into the statement).
    @discardableResult
    public func withTenantTransaction<Result>(
        _ tenant: UUID,
        isolation: IsolationLevel = .readCommitted,
        retries: Int = 0,
        _ body: (PostgresConnection) throws -> Result
    ) throws -> Result {
        try withTransaction(retries: retries, begin: { try $0.run(script: "BEGIN ISOLATION LEVEL \(isolation.sql); " + Self.setTenant(tenant)) }, body)
    }

    /// A tenant transaction whose first statement, `opening` (a request's session lookup), is
    /// sent with BEGIN and the tenant in one round trip (`pipeline`); `body` gets its result.
    @discardableResult
    public func withTenantTransaction<Result>(
        _ tenant: UUID,
        isolation: IsolationLevel = .readCommitted,
        retries: Int = 0,
        opening: SQLQuery,
        _ body: (PostgresResult, PostgresConnection) throws -> Result
    ) throws -> Result {
        var opened: PostgresResult?
        return try withTransaction(retries: retries, begin: { connection in
            opened = try connection.pipeline([
                "BEGIN ISOLATION LEVEL \(unsafeRaw: isolation.sql)",
                "SELECT set_config('roost.tenant_id', \(tenant.lowercasedText), true)",
                opening,
            ])[2]
        }) { connection in
            try body(opened!, connection)
        }
    }

    /// Switches the open transaction to `tenant` (a job claimed across tenants, then handled
    /// under its own tenant's row security).
    public func setTenant(_ tenant: UUID) throws {
        try run(script: Self.setTenant(tenant))
    }

    /// Reads of the open transaction are for `user` (nil: for nobody in particular, a job's or
    /// a change's own reads): row security hides from it what is hidden from that user (a
    /// duress alert, from its walker). `SET LOCAL`, so it ends with the transaction.
    public func setViewer(_ user: UUID?) throws {
        try run(script: "SET LOCAL roost.viewer_id = '\(user?.lowercasedText ?? "")'")
    }

    private static func setTenant(_ tenant: UUID) -> String {
        "SET LOCAL roost.tenant_id = '\(tenant.lowercasedText)'"
    }

    private func runTransactionOnce<Result>(
        begin: (PostgresConnection) throws -> Void, _ body: (PostgresConnection) throws -> Result
    ) throws -> Result {
        committedEarly = false
        do {
            try begin(self)
        } catch {
            rollBackQuietly()  // BEGIN took effect even if what followed it failed
            throw error
        }
        let result: Result
        do {
            result = try body(self)
        } catch {
            rollBackQuietly()
            throw error
        }
        // The body's last statement may have committed with it (`queryAndCommit`).
        guard !committedEarly else {
            committedEarly = false
            return result
        }
        do {
            try run(script: "COMMIT")
        } catch {
            rollBackQuietly()
            throw error
        }
        return result
    }

    /// Runs `body` in a savepoint of the open transaction: when it throws, its work alone is
    /// undone (the transaction, its locks and its tenant stay) and the error is rethrown. A
    /// job claimed by the transaction can so record its own failure before committing.
    public func withSavepoint<Result>(_ body: (PostgresConnection) throws -> Result) throws -> Result {
        try run(script: "SAVEPOINT roost_job")
        do {
            let result = try body(self)
            try run(script: "RELEASE SAVEPOINT roost_job")
            return result
        } catch {
            // If even this fails, the transaction is lost: that error goes up instead.
            try run(script: "ROLLBACK TO SAVEPOINT roost_job; RELEASE SAVEPOINT roost_job")
            throw error
        }
    }

    /// Rolls back after a failure; if even that fails the connection is no longer trusted.
    private func rollBackQuietly() {
        // A body that failed after committing early (a statement refused) has nothing to undo.
        guard !isBroken, !committedEarly else {
            committedEarly = false
            return
        }
        do {
            try run(script: "ROLLBACK")
        } catch {
            markBroken()
        }
    }
}
