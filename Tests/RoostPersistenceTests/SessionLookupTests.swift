import Foundation
import RoostPersistence
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
            try connection.withTenantTransaction(tenant) { try UserStore().sessionIsActive(tokenHashHex: UserStore.hex(hash), on: $0) }
        }
        #expect(try active(live, in: home))
        #expect(try !active(lapsed, in: home))
        #expect(try !active(live, in: other))
        #expect(try !active((0..<32).map { _ in 0 }, in: home))
        #expect(try connection.withTenantTransaction(home) { try UserStore().sessionIsActive(tokenHashHex: "not hex", on: $0) } == false)
        try connection.withTenantTransaction(home) { try UserStore().deleteSession(tokenHash: live, on: $0) }
        #expect(try !active(live, in: home))
    }
}
