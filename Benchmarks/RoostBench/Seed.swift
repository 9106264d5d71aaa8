import Foundation
import RoostPersistence
import RoostProtocol
import RoostServer

/// What a scenario works with: a tenant, a poster who owns every group, and members with
/// session tokens, all written straight into the database (registering thousands of accounts
/// through scrypt would take minutes and measure nothing of interest).
struct Seed {
    let tenant: UUID
    let posterToken: String
    let groups: [UUID]
    /// Member tokens, group by group (`members[g]` are the members of `groups[g]`).
    let members: [[String]]

    static func make(databaseURL: String, groups groupCount: Int, membersPerGroup: Int) throws -> Seed {
        let connection = try PostgresConnection.connect(ConnectionConfiguration(connectionString: databaseURL, applicationName: "roost-bench"))
        let slug = "bench-\(UUID().uuidString.prefix(8).lowercased())"
        let tenant = try TenantStore().create(slug: slug, name: "Bench", registration: .open, on: connection).id
        let seed = try connection.withTenantTransaction(tenant) { connection in
            func users(_ count: Int, _ prefix: String) throws -> [(UUID, String)] {
                let ids = try connection.query("""
                    INSERT INTO users (tenant_id, email, password_hash, display_name)
                    SELECT \(tenant), \(prefix) || i || '@bench.example', 'unusable', 'Neighbour ' || i FROM generate_series(1, \(count)) i
                    RETURNING id
                    """).rows.map { try $0.decode(UUID.self, "id") }
                let tokens = ids.map { _ in TenantToken.generate(tenant: tenant) }
                try connection.query("""
                    INSERT INTO sessions (tenant_id, token_hash, user_id, expires_at)
                    SELECT \(tenant), decode(h, 'hex'), u, now() + interval '1 day'
                    FROM unnest(\(tokens.map { Digest.hex($0.token.hash) })::text[], \(ids)::uuid[]) AS t(h, u)
                    """)
                return zip(ids, tokens.map(\.text)).map { ($0, $1) }
            }
            let poster = try users(1, "poster")[0]
            var groups: [UUID] = []
            var members: [[String]] = []
            for index in 0..<groupCount {
                let group = try GroupStore().create(tenant: tenant, owner: poster.0, name: "Bench group \(index)", description: "", on: connection).id
                let people = try users(membersPerGroup, "g\(index)m")
                try connection.query("""
                    INSERT INTO memberships (tenant_id, group_id, user_id, role)
                    SELECT \(tenant), \(group), u, 'member' FROM unnest(\(people.map(\.0))::uuid[]) AS t(u)
                    """)
                groups.append(group)
                members.append(people.map(\.1))
            }
            return Seed(tenant: tenant, posterToken: poster.1, groups: groups, members: members)
        }
        // A bulk load leaves the planner's statistics behind (autovacuum analyses later): without
        // this, a new tenant's thousands of sessions are estimated at one row, and the session
        // lookup of every handshake and post scans all of them (20–47 ms each at 10,000).
        try connection.query("ANALYZE users, sessions, groups, memberships")
        return seed
    }

    /// ejabberd accounts with these names (password `XMPP.password`, stored plain as
    /// `auth_password_format: plain` reads it) in ejabberd's own database.
    static func xmppAccounts(databaseURL: String, names: [String]) throws {
        let connection = try PostgresConnection.connect(ConnectionConfiguration(connectionString: databaseURL, applicationName: "roost-bench"))
        try connection.query("""
            INSERT INTO users (username, password) SELECT name, \(XMPP.password)::text FROM unnest(\(names)::text[]) AS t(name)
            ON CONFLICT (username) DO UPDATE SET password = excluded.password
            """)
    }
}
