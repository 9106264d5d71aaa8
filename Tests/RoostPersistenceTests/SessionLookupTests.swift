import Foundation
import RoostPersistence
import RoostProtocol
import RoostTestSupport
import Testing

/// The stream's check that its session still stands (`UserStore.sessionIsActive`): true for a
/// live session, false for an unknown, expired or ended one, and never another tenant's.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct SessionLookupTests {
    @Test func aSessionIsActiveUntilItExpiresOrEndsAndOnlyInItsTenant() throws {
        let connection = try TestDatabase.migratedConnection()
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let home = try TenantStore().create(slug: "sess-a-\(suffix)", name: "Ash Row", registration: .open, on: connection).id
        let other = try TenantStore().create(slug: "sess-b-\(suffix)", name: "Birch Row", registration: .open, on: connection).id
        let live = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let lapsed = (0..<32).map { _ in UInt8.random(in: 0...255) }
        try connection.withTenantTransaction(home) { connection in
            let user = try UserStore().create(tenant: home, email: "ada@example.org", phone: nil, passwordHash: "x", displayName: "Ada", on: connection)
            _ = try UserStore().createSession(tenant: home, tokenHash: live, user: user.id, lifetime: 3600, on: connection)
            _ = try UserStore().createSession(tenant: home, tokenHash: lapsed, user: user.id, lifetime: -1, on: connection)
        }
        func active(_ hash: [UInt8], in tenant: UUID) throws -> Bool {
            try connection.withTenantTransaction(tenant) { try UserStore().sessionIsActive(tokenHashHex: Digest.hex(hash), on: $0) }
        }
        #expect(try active(live, in: home))
        #expect(try !active(lapsed, in: home))
        #expect(try !active(live, in: other))
        #expect(try !active((0..<32).map { _ in 0 }, in: home))
        #expect(try connection.withTenantTransaction(home) { try UserStore().sessionIsActive(tokenHashHex: "not hex", on: $0) } == false)
        try connection.withTenantTransaction(home) { try UserStore().deleteSession(tokenHash: live, on: $0) }
        #expect(try !active(live, in: home))
    }

    /// The sweep's per-tenant time: a sign-in lowers it to the session's expiry, a longer one
    /// leaves it; a sweep ends what has expired, moves it to the earliest remaining expiry, and
    /// removes it with the tenant's last session, so quiet tenants are never visited.
    @Test func aTenantsSweepIsDueAtItsEarliestSessionExpiry() throws {
        let connection = try TestDatabase.migratedConnection()
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let tenant = try TenantStore().create(slug: "sweep-\(suffix)", name: "Cedar Row", registration: .open, on: connection).id
        let store = UserStore()
        func due() throws -> Double? {
            try connection.query("""
                SELECT extract(epoch FROM due_at - now())::float8 AS left FROM session_sweeps WHERE tenant_id = \(tenant)
                """).first?.decode(Double.self, "left")
        }
        #expect(try due() == nil)
        let soon = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let later = (0..<32).map { _ in UInt8.random(in: 0...255) }
        try connection.withTenantTransaction(tenant) { connection in
            let user = try store.create(tenant: tenant, email: "cy@example.org", phone: nil, passwordHash: "x", displayName: "Cy", on: connection)
            _ = try store.createSession(tenant: tenant, tokenHash: later, user: user.id, lifetime: 7200, on: connection)
            _ = try store.createSession(tenant: tenant, tokenHash: soon, user: user.id, lifetime: -5, on: connection)
            _ = try store.createSession(tenant: tenant, tokenHash: (0..<32).map { _ in 7 }, user: user.id, lifetime: 9000, on: connection)
        }
        #expect(try #require(try due()) < 0)  // the lapsed session set it; the longer ones left it
        let ended = try connection.withTenantTransaction(tenant) { try store.endExpiredSessions(tenant: tenant, limit: 10, on: $0) }
        #expect(ended == 1)
        let next = try #require(try due())
        #expect(next > 7100 && next <= 7200, "\(next)")  // the earliest remaining expiry
        try connection.withTenantTransaction(tenant) { connection in
            try connection.query("UPDATE sessions SET expires_at = now() - interval '1 second'")
            try connection.query("UPDATE session_sweeps SET due_at = now() WHERE tenant_id = \(tenant)")
        }
        #expect(try connection.withTenantTransaction(tenant) { try store.endExpiredSessions(tenant: tenant, limit: 10, on: $0) } == 2)
        #expect(try due() == nil)
    }
}
