import Foundation
import RoostPersistence
import RoostProtocol
import RoostTestSupport
import Testing

@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct RowLevelSecurityTests {
    let connection: PostgresConnection
    let tenantA: Tenant
    let tenantB: Tenant
    let userB: UUID

    init() throws {
        connection = try TestDatabase.migratedConnection()
        let suffix = UUID().uuidString.prefix(8).lowercased()
        tenantA = try TenantStore().create(slug: "rls-a-\(suffix)", name: "Elm Street", registration: .open, on: connection)
        tenantB = try TenantStore().create(slug: "rls-b-\(suffix)", name: "Oak Lane", registration: .open, on: connection)
        for tenant in [tenantA, tenantB] {
            try connection.withTenantTransaction(tenant.id) {
                try $0.query("""
                    INSERT INTO users (tenant_id, email, display_name, password_hash)
                    VALUES (\(tenant.id), \("same@example.org"), \(tenant.name + " neighbour"), \("x"))
                    """)
            }
        }
        let idB = tenantB.id
        userB = try connection.withTenantTransaction(idB) {
            try $0.query("SELECT id FROM users WHERE tenant_id = \(idB)").rows[0].decode(UUID.self, "id")
        }
    }

    @Test func theTestRoleDoesNotEscapeRowSecurity() throws {
        #expect(!(try connection.currentRole().escapesRowSecurity))
    }

    @Test func withTenantASetTenantBsRowsAreInvisible() throws {
        let names = try connection.withTenantTransaction(tenantA.id) {
            try $0.query("SELECT display_name FROM users WHERE email = \("same@example.org")").rows
                .map { try $0.decode(String.self, "display_name") }
        }
        #expect(names == ["Elm Street neighbour"])
        let found = try connection.withTenantTransaction(tenantA.id) {
            try $0.query("SELECT count(*) AS n FROM users WHERE id = \(userB)").rows[0].decode(Int.self, "n")
        }
        #expect(found == 0)
    }

    @Test func withTenantASetTenantBsRowsCannotBeChanged() throws {
        let updated = try connection.withTenantTransaction(tenantA.id) {
            try $0.query("UPDATE users SET display_name = \("hijacked") WHERE id = \(userB)").affectedRows
        }
        #expect(updated == 0)
        let deleted = try connection.withTenantTransaction(tenantA.id) {
            try $0.query("DELETE FROM users WHERE id = \(userB)").affectedRows
        }
        #expect(deleted == 0)
        #expect {
            try connection.withTenantTransaction(tenantA.id) {
                try $0.query("""
                    INSERT INTO users (tenant_id, email, display_name) VALUES (\(tenantB.id), \("x@example.org"), \("intruder"))
                    """)
            }
        } throws: { error in
            (error as? DatabaseError)?.code == .insufficientPrivilege
        }
        let name = try connection.withTenantTransaction(tenantB.id) {
            try $0.query("SELECT display_name FROM users WHERE id = \(userB)").rows[0].decode(String.self, "display_name")
        }
        #expect(name == "Oak Lane neighbour")
    }

    @Test func withNoTenantSetNoTenantRowIsVisible() throws {
        let count = try connection.query("SELECT count(*) AS n FROM users").rows[0].decode(Int.self, "n")
        #expect(count == 0)
        #expect {
            try connection.query("""
                INSERT INTO users (tenant_id, email, display_name) VALUES (\(tenantA.id), \("y@example.org"), \("nobody"))
                """)
        } throws: { error in
            (error as? DatabaseError)?.code == .insufficientPrivilege
        }
    }

    /// How many rows of the message at `seq` (its message, alert and event) a transaction reading
    /// for `viewer` finds.
    func rows(of seq: Int64, in group: UUID, tenant: UUID, readFor viewer: UUID?) throws -> [Int] {
        try connection.withTenantTransaction(tenant) { connection in
            try connection.setViewer(viewer)
            return try ["messages", "alerts", "group_events"].map { table in
                try connection.query("SELECT count(*) AS n FROM \(unsafeRaw: table) WHERE group_id = \(group) AND seq = \(seq)").rows[0]
                    .decode(Int.self, "n")
            }
        }
    }

    /// A message hidden from one user (a duress alert's walker): a transaction reading for that
    /// user (`setViewer`, which the session lookup does) finds neither it nor its event, nor can
    /// it change them; anyone else's, and a job's (no viewer), see both.
    @Test func whatIsHiddenFromAUserIsInvisibleToReadsForThemAlone() throws {
        let (tenant, walker, other) = (tenantB.id, userB, UUID())
        let group = try connection.withTenantTransaction(tenant) { connection in
            try GroupStore().create(tenant: tenant, owner: walker, name: "Hidden lane", description: "", on: connection).id
        }
        let seq = try connection.withTenantTransaction(tenant) { connection in
            var message = NewMessage(clientMessageID: nil, systemKey: "hidden-test", text: "silent", kind: .alert, severity: "red", template: "duress",
                                     location: nil, replyTo: nil)
            message.hiddenFrom = walker
            return try MessageStore().post(tenant: tenant, group: group, authorType: .user, authorID: walker, authorName: "walker",
                                           message: message, on: connection).seq
        }
        func seen(as viewer: UUID?) throws -> [Int] { try rows(of: seq, in: group, tenant: tenant, readFor: viewer) }
        #expect(try seen(as: walker) == [0, 0, 0])
        #expect(try seen(as: other) == [1, 1, 1])
        #expect(try seen(as: nil) == [1, 1, 1])
        let changed = try connection.withTenantTransaction(tenant) { connection in
            try connection.setViewer(walker)
            return try connection.query("UPDATE alerts SET status = 'closed' WHERE group_id = \(group) AND seq = \(seq)").affectedRows
        }
        #expect(changed == 0)
    }

    /// A message for the group's managers only (an alarm panel's duress alert): reads for its
    /// owner and admins find it and its event, reads for a member or a stranger do not, and a
    /// job's (no viewer) do; a member made admin sees it from then on.
    @Test func whatIsForTheManagersIsInvisibleToReadsForAnyoneElse() throws {
        let (tenant, owner) = (tenantB.id, userB)
        let member = try connection.withTenantTransaction(tenant) { connection in
            try connection.query("""
                INSERT INTO users (tenant_id, email, display_name, password_hash) VALUES (\(tenant), \("member-\(UUID().uuidString.lowercased())@example.org"), 'member', 'x')
                RETURNING id
                """).rows[0].decode(UUID.self, "id")
        }
        let group = try connection.withTenantTransaction(tenant) { connection in
            let group = try GroupStore().create(tenant: tenant, owner: owner, name: "Managers lane", description: "", on: connection).id
            try connection.query("INSERT INTO memberships (tenant_id, group_id, user_id, role) VALUES (\(tenant), \(group), \(member), 'member')")
            return group
        }
        let seq = try connection.withTenantTransaction(tenant) { connection in
            var message = NewMessage(clientMessageID: nil, systemKey: "managers-test", text: "Duress", kind: .alert, severity: "red", template: nil,
                                     location: nil, replyTo: nil)
            message.hiddenFrom = Audience.managersOnly
            return try MessageStore().post(tenant: tenant, group: group, authorType: .system, authorID: nil, authorName: "panel",
                                           message: message, on: connection).seq
        }
        func seen(as viewer: UUID?) throws -> [Int] { try rows(of: seq, in: group, tenant: tenant, readFor: viewer) }
        #expect(try seen(as: owner) == [1, 1, 1])
        #expect(try seen(as: member) == [0, 0, 0])
        #expect(try seen(as: UUID()) == [0, 0, 0])
        #expect(try seen(as: nil) == [1, 1, 1])
        try connection.withTenantTransaction(tenant) { connection in
            try connection.query("UPDATE memberships SET role = 'admin' WHERE group_id = \(group) AND user_id = \(member)")
        }
        #expect(try seen(as: member) == [1, 1, 1])
    }

    /// The fanout's audit reads many tenants' counters in one statement: each tenant's own
    /// groups only, with row security still in force, and no tenant left set behind it.
    @Test func groupStandingsReadEachTenantsOwnGroupsInOneStatement() throws {
        let userA = try connection.withTenantTransaction(tenantA.id) { [tenantA] in
            try $0.query("SELECT id FROM users WHERE tenant_id = \(tenantA.id)").rows[0].decode(UUID.self, "id")
        }
        let elm = try connection.withTenantTransaction(tenantA.id) { [tenantA] in
            try GroupStore().create(tenant: tenantA.id, owner: userA, name: "Elm", description: "", on: $0).id
        }
        let oak = try connection.withTenantTransaction(tenantB.id) { [tenantB, userB] in
            let oak = try GroupStore().create(tenant: tenantB.id, owner: userB, name: "Oak", description: "", on: $0).id
            try $0.query("UPDATE group_seqs SET last_seq = 7 WHERE group_id = \(oak)")
            return oak
        }
        let lastSeqs = try [(tenantA.id, elm), (tenantB.id, oak)].map { tenant, group in
            try connection.withTenantTransaction(tenant) {
                try $0.query("SELECT last_seq FROM group_seqs WHERE group_id = \(group)").rows[0].decode(Int64.self, "last_seq")
            }
        }
        #expect(lastSeqs[1] == 7)

        // Asked with the wrong tenant, a group is not there; asked twice, it is read twice.
        let standing = try GroupStore().standings(of: [(tenantA.id, elm), (tenantB.id, oak), (tenantA.id, oak), (tenantB.id, elm), (tenantB.id, oak)],
                                                  on: connection)
        #expect(standing.map { "\($0.tenant) \($0.group) \($0.lastSeq)" }.sorted()
            == ["\(tenantA.id) \(elm) \(lastSeqs[0])", "\(tenantB.id) \(oak) 7", "\(tenantB.id) \(oak) 7"].sorted())
        #expect(try GroupStore().standings(of: [], on: connection).isEmpty)
        // Nothing of a tenant is visible after it, in the same transaction.
        let after = try connection.withTransaction {
            _ = try GroupStore().standings(of: [(tenantB.id, oak)], on: $0)
            return try $0.query("SELECT current_setting('roost.tenant_id', true) AS t, (SELECT count(*) FROM group_seqs) AS n").rows[0]
        }
        #expect(try after.decode(String.self, "t") == "" && after.decode(Int.self, "n") == 0)
        // The two arrays must pair up.
        #expect {
            try connection.query("SELECT * FROM roost_group_standings(ARRAY[\(tenantA.id)]::uuid[], ARRAY[]::uuid[])")
        } throws: { error in
            (error as? DatabaseError)?.sqlState == "22023"
        }
    }

    @Test func everyTenantOwnedTableForcesRowSecurity() throws {
        let rows = try connection.query("""
            SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
                   (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid) AS policies
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind = 'r' AND n.nspname = 'public'
              AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id')
            """).rows
        #expect(rows.count >= 13)
        for row in rows {
            let table = try row.decode(String.self, "relname")
            // The deliberate exceptions: job indexes that workers claim across tenants, which must
            // therefore hold ids, times and attempt counts only, never personal data (a failed
            // attempt's error is kept without the database's detail, which may quote values).
            let jobTables = ["outbox_jobs": ["lane", "lease_until", "next_attempt_at", "outbox_id", "tenant_id"],
                             "checkin_deadlines": ["attempts", "checkin_id", "due_at", "last_error", "parked_at", "tenant_id"],
                             "bridge_watch": ["attempts", "bridge_id", "last_error", "offline", "parked_at", "silent_after", "tenant_id"],
                             "alert_escalations": ["attempts", "due_at", "escalation_id", "group_id", "last_error", "parked_at", "seq", "since",
                                                   "tenant_id"],
                             "live_location_jobs": ["attempts", "due_at", "flush", "group_id", "job_id", "last_error", "parked_at", "seq",
                                                    "tenant_id", "user_id"],
                             "session_sweeps": ["due_at", "tenant_id"],
                             "checkin_request_expiries": ["attempts", "due_at", "last_error", "parked_at", "request_id", "tenant_id"],
                             "password_reset_jobs": ["attempts", "due_at", "last_error", "parked_at", "request_id", "tenant_id"],
                             "retention_jobs": ["attempts", "due_at", "group_id", "last_error", "parked_at", "tenant_id"],
                             "media_expiries": ["attempts", "due_at", "last_error", "media_id", "parked_at", "tenant_id"],
                             "fanout_jobs": ["after_user", "created_at", "fanout_id", "tenant_id"],
                             "cap_expiries": ["attempts", "due_at", "group_id", "last_error", "message_id", "parked_at", "seq", "tenant_id"],
                             // And the index a DC-09 frame's identity is looked up in before its tenant is known.
                             "dc09_identities": ["account", "bridge_id", "line", "receiver", "tenant_id"],
                             // And the index a group's CAP feed token is found in: its hash and ids.
                             "cap_tokens": ["created_at", "group_id", "tenant_id", "token_hash"]]
            if let expected = jobTables[table] {
                let columns = try connection.query("""
                    SELECT array_agg(attname::text ORDER BY attname) AS names FROM pg_attribute
                    WHERE attrelid = \(table)::regclass AND attnum > 0 AND NOT attisdropped
                    """).rows[0].decode([String].self, "names")
                #expect(columns == expected, "\(table) holds more than ids and times")
                continue
            }
            #expect(try row.decode(Bool.self, "relrowsecurity"), "\(table) has row security off")
            #expect(try row.decode(Bool.self, "relforcerowsecurity"), "\(table) does not force row security")
            #expect(try row.decode(Int.self, "policies") >= 1, "\(table) has no policy")
        }
    }
}
