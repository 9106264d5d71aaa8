import Foundation
import RoostPersistence
import RoostProtocol

/// The outbound-abuse throttles of `AbuseLimits`, counted inside the transaction of the change
/// they guard (so a change that fails or is refused counts nothing): 429 with `Retry-After`.
enum Throttle {
    static func count(_ limits: [RateLimit], _ message: String, on connection: PostgresConnection) throws {
        do {
            try RateLimitStore().count(limits, on: connection)
        } catch let used as RateLimitStore.UsedUp {
            throw APIError(.tooManyRequests, code: .rateLimited, message: message, headers: ["Retry-After": String(used.retryAfter)])
        }
    }

    static let day = 86_400
    static let hour = 3_600

    /// Whether the tenant sends SMS to `phone` (`sms_prefixes`: null for everywhere); 400 naming
    /// `field` otherwise.
    static func requireSMSAllowed(_ phone: String, tenant: UUID, field: String, on connection: PostgresConnection) throws {
        guard let prefixes = try TenantStore().smsPrefixes(tenant, on: connection) else { return }
        guard prefixes.contains(where: { phone.hasPrefix($0) }) else {
            throw APIError.invalid("this neighbourhood does not send text messages to that country", field)
        }
    }
}
