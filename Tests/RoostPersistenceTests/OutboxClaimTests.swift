import Foundation
import RoostPersistence
import RoostProtocol
import RoostTestSupport
import Testing

/// How the outbox hands out work (`OutboxStore.claim`, sql/0030_delivery_lanes.sql): a row's
/// lane follows from its template and severity; a claim takes critical before normal before
/// bulk, and within a lane tenants take turns, so another tenant's code is never behind one
/// tenant's storm.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct OutboxClaimTests {
    /// Queues `count` rows of `template` (an alert's, of `severity`) for `tenant`.
    func queue(_ count: Int, _ template: TemplateName, severity: String? = nil, tenant: UUID, on connection: PostgresConnection) throws {
        let data = RawJSON(severity.map { #"{"alert":{"alert":{"severity":"\#($0)"}}}"# } ?? "{}")
        try connection.withTenantTransaction(tenant) { connection in
            for _ in 0..<count {
                try OutboxStore().enqueue(tenant: tenant, channel: .push, recipient: "device", template: template, data: data, on: connection)
            }
        }
    }

    @Test func criticalGoesFirstAndTenantsTakeTurnsWithinALane() throws {
        let database = try TestDatabase.makeScratch()
        defer { TestDatabase.dropScratch(database) }
        let connection = try TestDatabase.connect(database: database)
        let storm = try TenantStore().create(slug: "storm", name: "Storm Town", registration: .open, on: connection).id
        let quiet = try TenantStore().create(slug: "quiet", name: "Quiet Town", registration: .open, on: connection).id
        // The storm's tenant queued chat, amber and then red first; the quiet one, a chat line and
        // then a verification code.
        try queue(300, .chat, tenant: storm, on: connection)
        try queue(300, .alert, severity: "amber", tenant: storm, on: connection)
        try queue(300, .alert, severity: "red", tenant: storm, on: connection)
        try queue(1, .chat, tenant: quiet, on: connection)
        try queue(1, .verification, tenant: quiet, on: connection)

        let lanes = try connection.query("SELECT lane, count(*) AS n FROM outbox_jobs GROUP BY lane ORDER BY lane").rows
            .map { (try $0.decode(Int.self, "lane"), try $0.decode(Int.self, "n")) }
        #expect(lanes.map(\.0) == [0, 1, 2] && lanes.map(\.1) == [301, 300, 301], "\(lanes)")

        let waiting = try OutboxStore().oldestWaiting(on: connection)
        #expect(waiting.keys.map(\.rawValue).sorted() == [0, 1, 2] && waiting.values.allSatisfy { $0 >= 0 && $0 < 600 }, "\(waiting)")

        let first = try OutboxStore().claim(limit: 256, perTenant: 128, lease: 60, on: connection)
        #expect(first.count == 130, "the storm's 128 and the quiet tenant's 2")
        // The quiet tenant's code is among the first two, beside the storm's first red push.
        #expect(first.prefix(2).contains { $0.tenant == quiet && $0.lane == .critical }, "\(first.prefix(3))")
        #expect(first.filter { $0.tenant == storm }.allSatisfy { $0.lane == .critical }, "red before amber and chat")
        #expect(first.last?.tenant == quiet && first.last?.lane == .bulk, "the quiet tenant's chat line, its second turn")

        // What is claimed is leased: the next claim goes on with the rest, red first.
        let second = try OutboxStore().claim(limit: 256, perTenant: 128, lease: 60, on: connection)
        #expect(second.count == 128 && second.allSatisfy { $0.tenant == storm && $0.lane == .critical })
        let rest = try OutboxStore().claim(limit: 1000, perTenant: 1000, lease: 60, on: connection)
        #expect(rest.count == 300 + 300 + 300 - 256)
        #expect(rest.map(\.lane.rawValue) == rest.map(\.lane.rawValue).sorted(), "lane by lane")
    }
}
