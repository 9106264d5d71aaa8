import Foundation
import RoostPersistence
import RoostProtocol
import RoostServer

/// What a scenario works with: a tenant, a poster who owns every group, and members with
/// session tokens. The accounts, their sessions and the memberships are written straight into
/// the database (registering thousands of accounts through scrypt would take minutes and
/// measure nothing of interest); the groups are created through the API, as a client does, so
/// the seed does not depend on how the measured server keeps a group (scripts/bench-ab seeds
/// servers a migration apart).
struct Seed {
    let tenant: UUID
    let posterToken: String
    let groups: [UUID]
    /// Member tokens, group by group (`members[g]` are the members of `groups[g]`).
    let members: [[String]]

    /// The server on `port` must allow the poster `groups` new groups
    /// (`ROOST_GROUPS_PER_USER_PER_DAY`, raised by the benchmark scripts).
    static func make(databaseURL: String, port: UInt16, groups groupCount: Int, membersPerGroup: Int) throws -> Seed {
        let connection = try PostgresConnection.connect(ConnectionConfiguration(connectionString: databaseURL, applicationName: "roost-bench"))
        let slug = "bench-\(UUID().uuidString.prefix(8).lowercased())"
        let tenant = try TenantStore().create(slug: slug, name: "Bench", registration: .open, on: connection).id
        func users(_ count: Int, _ prefix: String) throws -> [(UUID, String)] {
            try connection.withTenantTransaction(tenant) { connection in
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
        }
        let poster = try users(1, "poster")[0]
        let api = try HTTPPoster(port: port)
        var groups: [UUID] = []
        var members: [[String]] = []
        for index in 0..<groupCount {
            let (status, body) = try api.request("POST", "/v1/groups", body: #"{"name":"Bench group \#(index)"}"#, token: poster.1)
            guard status == 201, let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
                  let id = (object["id"] as? String).flatMap(UUID.init(uuidString:)) else {
                throw BenchError("creating a group answered \(status): \(body.prefix(200))")
            }
            let people = try users(membersPerGroup, "g\(index)m")
            try connection.withTenantTransaction(tenant) { connection in
                try connection.query("""
                    INSERT INTO memberships (tenant_id, group_id, user_id, role)
                    SELECT \(tenant), \(id), u, 'member' FROM unnest(\(people.map(\.0))::uuid[]) AS t(u)
                    """)
            }
            groups.append(id)
            members.append(people.map(\.1))
        }
        // A bulk load leaves the planner's statistics behind (autovacuum analyses later): without
        // this, a new tenant's thousands of sessions are estimated at one row, and the session
        // lookup of every handshake and post scans all of them (20–47 ms each at 10,000).
        try connection.query("ANALYZE users, sessions, groups, memberships")
        return Seed(tenant: tenant, posterToken: poster.1, groups: groups, members: members)
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
