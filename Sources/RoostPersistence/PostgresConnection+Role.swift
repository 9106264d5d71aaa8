/// The PostgreSQL role a connection runs as, and whether it escapes row-level security.
public struct DatabaseRole: Sendable, Equatable {
    public let name: String
    public let isSuperuser: Bool
    public let bypassesRowSecurity: Bool

    /// Superusers and BYPASSRLS roles see every tenant's rows whatever the policies say.
    public var escapesRowSecurity: Bool { isSuperuser || bypassesRowSecurity }
}

extension PostgresConnection {
    public func currentRole() throws -> DatabaseRole {
        let row = try query("""
            SELECT rolname, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user
            """).rows[0]
        return DatabaseRole(
            name: try row.decode(String.self, "rolname"),
            isSuperuser: try row.decode(Bool.self, "rolsuper"),
            bypassesRowSecurity: try row.decode(Bool.self, "rolbypassrls"))
    }
}

extension PostgresConnection {
    /// How many of the schema's tables the connection's role owns. A role that owns a table can
    /// switch its row security off (`ALTER TABLE ... NO FORCE ROW LEVEL SECURITY`), so the
    /// server is meant to run as a role that owns none (docs/SECURITY.md).
    public func ownedTableCount() throws -> Int {
        try query("""
            SELECT count(*) AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND pg_get_userbyid(c.relowner) = current_user
            """).rows[0].decode(Int.self, "n")
    }

    /// Run by the tables' owner after migrating: gives `role` what `roost serve` needs and
    /// nothing more: reading and writing rows of every table (row security still applies to
    /// it), reading the migration history but not writing it, and no DDL at all (Roost's keys
    /// are UUIDs and counters in rows: there are no sequences to grant). Only what is
    /// missing is granted, so a start with nothing new takes no lock on any table (a GRANT
    /// waits for every transaction on its table, and everything after it waits for the GRANT).
    public func grantRuntimeAccess(to role: String) throws {
        // Nodes starting together would otherwise update the same catalog rows at once (and
        // PostgreSQL answers "tuple concurrently updated"): one at a time, and whoever comes
        // second finds nothing missing.
        try withTransaction { connection in
            try connection.query("SELECT pg_advisory_xact_lock(hashtext('roost.grants'))")
            let statements = try connection.query("""
                SELECT format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), \(role)) AS sql
                WHERE NOT has_schema_privilege(\(role), current_schema(), 'USAGE')
                UNION ALL
                SELECT format('GRANT %s ON %I TO %I', CASE WHEN c.relname = 'roost_schema_migrations' THEN 'SELECT'
                                                           ELSE 'SELECT, INSERT, UPDATE, DELETE' END, c.relname, \(role))
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
                  AND NOT has_table_privilege(\(role), c.oid, CASE WHEN c.relname = 'roost_schema_migrations' THEN 'SELECT'
                                                                   ELSE 'SELECT, INSERT, UPDATE, DELETE' END)
                """).rows.map { try $0.decode(String.self, "sql") }
            for statement in statements { try connection.run(script: statement) }
        }
    }
}
