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
