import Foundation

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
        var attempt = 0
        while true {
            do {
                return try runTransactionOnce(isolation: isolation, body)
            } catch let error as DatabaseError where error.isRetryableTransactionFailure && attempt < retries {
                attempt += 1
            }
        }
    }

    /// A transaction in which row-level security sees only `tenant`'s rows
    /// (`set_config('roost.tenant_id', ..., true)` is `SET LOCAL` with a parameter).
    @discardableResult
    public func withTenantTransaction<Result>(
        _ tenant: UUID,
        isolation: IsolationLevel = .readCommitted,
        retries: Int = 0,
        _ body: (PostgresConnection) throws -> Result
    ) throws -> Result {
        try withTransaction(isolation: isolation, retries: retries) { connection in
            try connection.query("SELECT set_config('roost.tenant_id', \(tenant.uuidString.lowercased()), true)")
            return try body(connection)
        }
    }

    private func runTransactionOnce<Result>(
        isolation: IsolationLevel, _ body: (PostgresConnection) throws -> Result
    ) throws -> Result {
        try run(script: "BEGIN ISOLATION LEVEL \(isolation.sql)")
        let result: Result
        do {
            result = try body(self)
        } catch {
            rollBackQuietly()
            throw error
        }
        do {
            try run(script: "COMMIT")
        } catch {
            rollBackQuietly()
            throw error
        }
        return result
    }

    /// Rolls back after a failure; if even that fails the connection is no longer trusted.
    private func rollBackQuietly() {
        guard !isBroken else { return }
        do {
            try run(script: "ROLLBACK")
        } catch {
            markBroken()
        }
    }
}
