import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

private struct Deliberate: Error {}

@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct TransactionTests {
    @Test func aUniqueViolationHasItsOwnCodeAndNamesTheConstraint() throws {
        let connection = try TestDatabase.connect()
        try connection.withTransaction { connection in
            try connection.run(script: "CREATE TEMP TABLE street (name text CONSTRAINT street_name_key UNIQUE) ON COMMIT DROP")
            try connection.query("INSERT INTO street (name) VALUES (\("Elm"))")
            try connection.run(script: "SAVEPOINT again")
            #expect {
                try connection.query("INSERT INTO street (name) VALUES (\("Elm"))")
            } throws: { error in
                let error = error as? DatabaseError
                return error?.code == .uniqueViolation && error?.constraint == "street_name_key" && error?.sqlState == "23505"
            }
            try connection.run(script: "ROLLBACK TO SAVEPOINT again")
        }
    }

    @Test func aThrowingTransactionLeavesNoTrace() throws {
        let connection = try TestDatabase.connect()
        let table = try TestDatabase.makeScratchTable("v int", on: connection)
        defer { TestDatabase.dropScratchTable(table, on: connection) }

        #expect(throws: Deliberate.self) {
            try connection.withTransaction { connection in
                try connection.query("INSERT INTO \(unsafeRaw: table) VALUES (\(1))")
                throw Deliberate()
            }
        }
        let count = try connection.query("SELECT count(*) AS n FROM \(unsafeRaw: table)").rows[0].decode(Int.self, "n")
        #expect(count == 0)
        // The connection is clean afterwards: a committed transaction sticks.
        try connection.withTransaction { try $0.query("INSERT INTO \(unsafeRaw: table) VALUES (\(2))") }
        #expect(try connection.query("SELECT count(*) AS n FROM \(unsafeRaw: table)").rows[0].decode(Int.self, "n") == 1)
    }

    /// A scratch table of positive values, written through `connection` and read back through
    /// a second connection, which sees only what was committed.
    private struct Observed {
        let connection: PostgresConnection
        let observer: PostgresConnection
        let table: String

        init() throws {
            connection = try TestDatabase.connect()
            observer = try TestDatabase.connect()
            table = try TestDatabase.makeScratchTable("v int CHECK (v > 0)", on: connection)
        }

        func values() throws -> [Int] {
            try observer.query("SELECT v FROM \(unsafeRaw: table) ORDER BY v").rows.map { try $0.decode(Int.self, "v") }
        }

        func drop() { TestDatabase.dropScratchTable(table, on: connection) }
    }

    @Test func queryAndCommitEndsTheTransactionWithItsStatement() throws {
        let observed = try Observed()
        defer { observed.drop() }
        let (connection, table, values) = (observed.connection, observed.table, observed.values)

        // Committed with its statement: another connection sees both rows once it returns.
        let returned = try connection.withTransaction { connection in
            try connection.query("INSERT INTO \(unsafeRaw: table) VALUES (\(1))")
            return try connection.queryAndCommit("INSERT INTO \(unsafeRaw: table) VALUES (\(2)) RETURNING v").rows[0].decode(Int.self, "v")
        }
        #expect(returned == 2)
        #expect(try values() == [1, 2])

        // A failing last statement commits nothing: the transaction's earlier row goes too.
        #expect(throws: DatabaseError.self) {
            try connection.withTransaction { connection in
                try connection.query("INSERT INTO \(unsafeRaw: table) VALUES (\(3))")
                try connection.queryAndCommit("INSERT INTO \(unsafeRaw: table) VALUES (\(-1))")
            }
        }
        #expect(try values() == [1, 2])

        // A statement after it would run outside the transaction: refused, and the commit stands.
        #expect {
            try connection.withTransaction { connection in
                try connection.queryAndCommit("INSERT INTO \(unsafeRaw: table) VALUES (\(4))")
                try connection.query("INSERT INTO \(unsafeRaw: table) VALUES (\(5))")
            }
        } throws: { error in
            (error as? DatabaseError)?.message.contains("after its transaction was committed") == true
        }
        #expect(try values() == [1, 2, 4])

        // Outside a transaction there is nothing to commit: refused, and the connection is fine.
        #expect(throws: DatabaseError.self) { try connection.queryAndCommit("INSERT INTO \(unsafeRaw: table) VALUES (\(6))") }
        try connection.withTransaction { try $0.query("INSERT INTO \(unsafeRaw: table) VALUES (\(7))") }
        #expect(try values() == [1, 2, 4, 7])
    }

    @Test func whatFollowsACommitInItsRoundTripRunsAfterItAndCannotUndoIt() throws {
        let observed = try Observed()
        defer { observed.drop() }
        let (connection, table, values) = (observed.connection, observed.table, observed.values)

        // It runs in a transaction of its own, after the commit: the row it adds is there too.
        let (inserted, afterwards) = try connection.withTransaction { connection in
            try connection.queryAndCommit("INSERT INTO \(unsafeRaw: table) VALUES (\(1)) RETURNING v",
                                          then: "INSERT INTO \(unsafeRaw: table) VALUES (\(2))")
        }
        #expect(try inserted.rows[0].decode(Int.self, "v") == 1 && afterwards == nil)
        #expect(try values() == [1, 2])

        // Its failure comes back, not thrown, and the commit stands.
        let failed = try connection.withTransaction { connection in
            try connection.queryAndCommit("INSERT INTO \(unsafeRaw: table) VALUES (\(3))", then: "INSERT INTO \(unsafeRaw: table) VALUES (\(-3))")
        }
        #expect(failed.afterwards?.sqlState == "23514")
        #expect(try values() == [1, 2, 3])

        // When the statement fails, nothing commits and what follows finds the transaction aborted.
        #expect {
            try connection.withTransaction { connection in
                try connection.queryAndCommit("INSERT INTO \(unsafeRaw: table) VALUES (\(-4))", then: "INSERT INTO \(unsafeRaw: table) VALUES (\(4))")
            }
        } throws: { error in
            (error as? DatabaseError)?.sqlState == "23514"
        }
        #expect(try values() == [1, 2, 3])
        #expect(!connection.isBroken)
        try connection.withTransaction { try $0.query("INSERT INTO \(unsafeRaw: table) VALUES (\(5))") }
        #expect(try values() == [1, 2, 3, 5])
    }

    @Test func aSerializationFailureIsRetriedWhenAsked() throws {
        let first = try TestDatabase.connect()
        let second = try TestDatabase.connect()
        let table = try TestDatabase.makeScratchTable("v int", on: first)
        defer { TestDatabase.dropScratchTable(table, on: first) }

        // Write skew: both read the sum, both insert; SERIALIZABLE must fail one of them.
        var attempts = 0
        try first.withTransaction(isolation: .serializable, retries: 2) { connection in
            attempts += 1
            let sum = try connection.query("SELECT coalesce(sum(v), 0) AS s FROM \(unsafeRaw: table)").rows[0].decode(Int.self, "s")
            if attempts == 1 {
                try second.withTransaction(isolation: .serializable) { other in
                    _ = try other.query("SELECT coalesce(sum(v), 0) AS s FROM \(unsafeRaw: table)")
                    try other.query("INSERT INTO \(unsafeRaw: table) VALUES (\(10))")
                }
            }
            try connection.query("INSERT INTO \(unsafeRaw: table) VALUES (\(sum + 1))")
        }
        #expect(attempts == 2)
        let values = try first.query("SELECT v FROM \(unsafeRaw: table) ORDER BY v").rows.map { try $0.decode(Int.self, "v") }
        #expect(values == [10, 11])
    }

    @Test func withoutRetriesASerializationFailureSurfaces() throws {
        let first = try TestDatabase.connect()
        let second = try TestDatabase.connect()
        let table = try TestDatabase.makeScratchTable("v int", on: first)
        defer { TestDatabase.dropScratchTable(table, on: first) }
        #expect {
            try first.withTransaction(isolation: .serializable) { connection in
                _ = try connection.query("SELECT count(*) FROM \(unsafeRaw: table)")
                try second.withTransaction(isolation: .serializable) { other in
                    _ = try other.query("SELECT count(*) FROM \(unsafeRaw: table)")
                    try other.query("INSERT INTO \(unsafeRaw: table) VALUES (\(1))")
                }
                try connection.query("INSERT INTO \(unsafeRaw: table) VALUES (\(2))")
            }
        } throws: { error in
            (error as? DatabaseError)?.isRetryableTransactionFailure == true
        }
    }

    @Test func theTenantSettingLastsOnlyForItsTransaction() throws {
        let connection = try TestDatabase.connect()
        let tenant = UUID()
        let inside = try connection.withTenantTransaction(tenant) {
            try $0.query("SELECT current_setting('roost.tenant_id', true) AS t").rows[0].decode(String.self, "t")
        }
        #expect(inside == tenant.uuidString.lowercased())
        let after = try connection.query("SELECT coalesce(current_setting('roost.tenant_id', true), '') AS t").rows[0]
        #expect(try after.decode(String.self, "t") == "")
    }

    @Test func aTransactionOpenedWithItsFirstStatementSetsTheTenantBeforeItAndLastsNoLonger() throws {
        let connection = try TestDatabase.connect()
        let tenant = UUID()
        // The opening statement already sees the tenant: it is set in the same round trip, before it.
        let (opened, inside) = try connection.withTenantTransaction(
            tenant, opening: "SELECT current_setting('roost.tenant_id', true) AS t, \(41) + 1 AS answer"
        ) { found, connection in
            (try found.rows[0].decode(String.self, "t"),
             try connection.query("SELECT current_setting('roost.tenant_id', true) AS t, now() < statement_timestamp() AS earlier").rows[0])
        }
        #expect(opened == tenant.uuidString.lowercased())
        // The body runs in the transaction the pipeline began: its local setting and its start time hold.
        #expect(try inside.decode(String.self, "t") == tenant.uuidString.lowercased())
        #expect(try inside.decode(Bool.self, "earlier"))
        let after = try connection.query("SELECT coalesce(current_setting('roost.tenant_id', true), '') AS t").rows[0]
        #expect(try after.decode(String.self, "t") == "")
    }

    @Test func aFailingOpeningStatementRollsBackAndTheConnectionServesOn() throws {
        let connection = try TestDatabase.connect()
        let table = try TestDatabase.makeScratchTable("v int", on: connection)
        defer { TestDatabase.dropScratchTable(table, on: connection) }
        var ran = false
        #expect {
            try connection.withTenantTransaction(UUID(), opening: "SELECT 1 / \(0) AS v") { _, _ in ran = true }
        } throws: { error in
            (error as? DatabaseError)?.sqlState == "22012"
        }
        #expect(!ran)
        #expect(!connection.isBroken)
        try connection.withTenantTransaction(UUID(), opening: "INSERT INTO \(unsafeRaw: table) VALUES (\(7))") { inserted, connection in
            #expect(inserted.affectedRows == 1)
        }
        #expect(try connection.query("SELECT sum(v) AS s FROM \(unsafeRaw: table)").rows[0].decode(Int.self, "s") == 7)
    }

    @Test func aPipelineAnswersInOrderAndStopsAtItsFirstFailure() throws {
        let connection = try TestDatabase.connect()
        let table = try TestDatabase.makeScratchTable("v int", on: connection)
        defer { TestDatabase.dropScratchTable(table, on: connection) }
        let results = try connection.pipeline([
            "INSERT INTO \(unsafeRaw: table) VALUES (\(1)), (\(2))",
            "SELECT \("Elm") AS street, \(Data([0, 255])) AS bytes",
            "SELECT sum(v) AS s FROM \(unsafeRaw: table)",
        ])
        #expect(results.count == 3 && results[0].affectedRows == 2)
        #expect(try results[1].rows[0].decode(String.self, "street") == "Elm")
        #expect(try results[1].rows[0].decode(Data.self, "bytes") == Data([0, 255]))
        // Outside BEGIN the pipeline is one implicit transaction: the insert saw by the sum.
        #expect(try results[2].rows[0].decode(Int.self, "s") == 3)

        #expect {
            try connection.pipeline([
                "INSERT INTO \(unsafeRaw: table) VALUES (\(10))",
                "SELECT 1 / \(0) AS v",
                "INSERT INTO \(unsafeRaw: table) VALUES (\(100))",
            ])
        } throws: { error in
            (error as? DatabaseError)?.sqlState == "22012"
        }
        // Nothing of the failed pipeline stayed, and the connection answers the next query.
        #expect(!connection.isBroken)
        #expect(try connection.query("SELECT sum(v) AS s FROM \(unsafeRaw: table)").rows[0].decode(Int.self, "s") == 3)
    }
}
