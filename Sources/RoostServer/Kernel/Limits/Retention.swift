import Foundation
import RoostPersistence
import RoostProtocol

/// Retention (API.md "Accounts"): the operator sets how many days a tenant's groups keep their
/// history, a group's owner may keep it for less, and `RetentionJobs` purges what has come of
/// age (never an open alert or the replies to it). A cursor that falls behind gets `reset` on
/// the stream and 410 `expired` over REST, with the group's first kept seq.
enum Retention {
    static let days = 1...36_500

    static func validate(days value: Int, field: String = "retention_days") throws(APIError) {
        guard days.contains(value) else { throw APIError.invalid("\(field) is 1 to 36500 days, or null to keep everything", field) }
    }

    /// A group keeps its history no longer than its tenant does.
    static func requireWithinTenant(_ days: Int?, tenant: UUID, on connection: PostgresConnection) throws {
        guard let days, let limit = try TenantStore().find(id: tenant, on: connection)?.retentionDays, days > limit else { return }
        throw APIError.invalid("retention_days is at most \(limit), the days this neighbourhood keeps its history", "retention_days")
    }

    /// In the caller's transaction, sets the tenant's retention (nil: for good) and, when there
    /// is one, schedules a purge of every group at once; nil when no tenant has the slug.
    static func setTenant(slug: String, days: Int?, on connection: PostgresConnection) throws -> Tenant? {
        guard let tenant = try TenantStore().setRetention(slug: slug, days: days, on: connection) else { return nil }
        if days != nil {
            try connection.setTenant(tenant.id)
            try RetentionStore().scheduleAll(tenant: tenant.id, on: connection)
        }
        return tenant
    }
}
