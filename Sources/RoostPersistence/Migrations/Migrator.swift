/// Applies migrations in order, each in its own transaction, recorded with its checksum.
///
/// A session-level advisory lock serialises runners: when several nodes start at once, the
/// first applies what is missing and the others, once they get the lock, find nothing to do.
public struct Migrator: Sendable {
    /// The advisory lock key: "Roost" in ASCII, fixed so every node and version agrees.
    static let lockKey: Int64 = 0x526F_6F73_74
    static let historyTable = "roost_schema_migrations"

    public let migrations: [Migration]

    public init(migrations: [Migration]) {
        self.migrations = migrations
    }

    /// Applies what is missing and returns it (empty when the database is up to date).
    /// Refuses, before applying anything, if an applied file was edited or is unknown here.
    @discardableResult
    public func run(on connection: PostgresConnection) throws -> [Migration] {
        try connection.query("SELECT pg_advisory_lock(\(Self.lockKey))")
        defer { releaseLock(on: connection) }

        try connection.run(script: """
            CREATE TABLE IF NOT EXISTS \(Self.historyTable) (
                version integer PRIMARY KEY,
                name text NOT NULL,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        let applied = try appliedChecksums(on: connection)
        try verify(applied: applied)

        var newlyApplied: [Migration] = []
        for migration in migrations where applied[migration.version] == nil {
            do {
                try connection.withTransaction { connection in
                    try connection.run(script: migration.sql)
                    try connection.query("""
                        INSERT INTO roost_schema_migrations (version, name, checksum)
                        VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                        """)
                }
            } catch let error as DatabaseError {
                var wrapped = error
                wrapped.message = "migration \(migration.fileName) failed: \(error.message)"
                throw wrapped
            }
            newlyApplied.append(migration)
        }
        return newlyApplied
    }

    /// The newest migration applied to the database, 0 when it has no Roost schema at all (no
    /// history table). The serving role may read the history (its one SELECT grant there).
    public static func schemaVersion(on connection: PostgresConnection) throws -> Int {
        do {
            return try connection.query("SELECT coalesce(max(version), 0) AS version FROM roost_schema_migrations").rows[0].decode(Int.self, "version")
        } catch let error as DatabaseError where error.code == .undefinedTable {
            return 0
        }
    }

    /// The versions recorded as applied, with their checksums.
    public func appliedChecksums(on connection: PostgresConnection) throws -> [Int: String] {
        var applied: [Int: String] = [:]
        for row in try connection.query("SELECT version, checksum FROM roost_schema_migrations").rows {
            applied[try row.decode(Int.self, "version")] = try row.decode(String.self, "checksum")
        }
        return applied
    }

    private func verify(applied: [Int: String]) throws {
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for (version, checksum) in applied.sorted(by: { $0.key < $1.key }) {
            guard let migration = known[version] else {
                throw DatabaseError(
                    .migration,
                    "the database has migration \(version) applied, which this Roost does not have",
                    hint: "run the Roost version that applied it, or a newer one")
            }
            guard migration.checksum == checksum else {
                throw DatabaseError(
                    .migration,
                    "migration \(migration.fileName) was edited after it was applied (checksum differs)",
                    hint: "restore the applied file and put the change in a new migration")
            }
        }
    }

    private func releaseLock(on connection: PostgresConnection) {
        guard !connection.isBroken else { return }  // a closed session releases its locks itself
        do {
            try connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))")
        } catch {
            connection.markBroken()  // the lock may still be held: never lend this session again
        }
    }
}
