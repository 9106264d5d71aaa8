import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
import Synchronization

/// The one budget every email and text Roost sends goes through (docs/SECURITY.md, "Messages
/// outside the app"): a message is charged, in the transaction that queues it, to its
/// destination address (a day, whatever the tenant), to the account that caused it (a day, every
/// kind together; lower for an account younger than a day or with no proven address), and to
/// its tenant (a day). Budgets are counted in one order, destination, account, tenant, by every
/// sender, so two senders never wait on each other in a circle.
///
/// What the server sends on its own (alerts by email when no device answers, bridge notices,
/// a missed check-in told to contacts) is charged to the tenant and kept in bounds by its own
/// per-recipient rules (`alert_fallback`, `bridge_notice`), not by the destination budget, which
/// is there against accounts making Roost message strangers.
///
/// A request over a budget is 429 `rate_limited` naming it (`field`: `destination_budget`,
/// `account_budget` or `tenant_budget`); a job over one drops that message (`allows`), and both
/// are counted on `/metrics` (`roost_outside_messages_refused_total{budget}`); a tenant's is
/// logged too, since it silences every member.
enum OutsideBudget {
    enum Name: String, CaseIterable, Sendable {
        case destination, account, tenant
        case alertFallback = "alert_fallback"
        case bridgeNotice = "bridge_notice"
        var field: String { "\(rawValue)_budget" }
    }

    /// A budget is used up: which, and for how many seconds more.
    struct Exhausted: Error {
        let budget: Name
        let retryAfter: Int
    }

    /// Charges one message to `address` on `channel` (`email` or `sms`), caused by `account`
    /// (nil: by the server itself, charged to the tenant alone unless `destination`), in `tenant`.
    static func charge(_ channel: OutboxChannel, to address: String, tenant: UUID, by account: User?, destination: Bool? = nil, limits: AbuseLimits,
                       now: Date = Date(), on connection: PostgresConnection) throws {
        var budgets: [(Name, RateLimit)] = []
        if destination ?? (account != nil) {
            budgets.append((.destination, RateLimit(RateLimitKey(.outsideDestination, channel, address.lowercased()), limit: limits.outsidePerDestinationPerDay,
                                                    window: Throttle.day)))
        }
        if let account {
            let isNew = now.timeIntervalSince(account.createdAt) < Double(Throttle.day) || !(account.emailVerified || account.phoneVerified)
            budgets.append((.account, RateLimit(RateLimitKey(.outsideAccount, account.id.lowercasedText),
                                                limit: isNew ? limits.outsidePerNewAccountPerDay : limits.outsidePerAccountPerDay, window: Throttle.day)))
        }
        budgets.append((.tenant, RateLimit(RateLimitKey(.outsideTenant, tenant.lowercasedText), limit: limits.outsidePerTenantPerDay, window: Throttle.day)))
        for (name, budget) in budgets {
            do {
                try RateLimitStore().count([budget], on: connection)
            } catch let used as RateLimitStore.UsedUp {
                refused(name, tenant: tenant)
                throw Exhausted(budget: name, retryAfter: used.retryAfter)
            }
        }
    }

    /// `charge` for a request: over a budget, the request fails with 429 naming it.
    static func require(_ channel: OutboxChannel, to address: String, tenant: UUID, by account: User?, limits: AbuseLimits,
                        on connection: PostgresConnection) throws {
        do {
            try charge(channel, to: address, tenant: tenant, by: account, limits: limits, on: connection)
        } catch let error as Exhausted {
            let whose = switch error.budget {
            case .destination: "that address has been sent enough messages today"
            case .account: "this account has sent enough messages outside the app today"
            case .tenant: "this neighbourhood has sent enough messages outside the app today"
            case .alertFallback, .bridgeNotice: "enough messages of this kind were sent"
            }
            throw APIError(.tooManyRequests, code: .rateLimited, message: whose + "; try again later", field: error.budget.field,
                           headers: ["Retry-After": String(error.retryAfter)])
        }
    }

    /// `charge` for a job: true when the message may go; over a budget it is dropped and nothing
    /// of the charge stays counted (a savepoint), and the job goes on.
    static func allows(_ channel: OutboxChannel, to address: String, tenant: UUID, by account: User?, destination: Bool? = nil, limits: AbuseLimits,
                       on connection: PostgresConnection) throws -> Bool {
        do {
            try connection.withSavepoint { connection throws in
                try charge(channel, to: address, tenant: tenant, by: account, destination: destination, limits: limits, on: connection)
            }
            return true
        } catch is Exhausted {
            return false
        }
    }

    // MARK: - Refusals, for /metrics and the log

    private static let refusals = Mutex<[Name: Int]>([:])
    /// Where a tenant's budget running out is reported (the server's log once `serve` sets it).
    static let log = Mutex<Log?>(nil)

    /// A message `budget` held back: counted, and logged when it is the tenant's. The per-person
    /// rules call it too (`alert_fallback`: a person had `OutboxStore.alertFallbacksPerRecipientPerHour`;
    /// `bridge_notice`: a manager had this hour's bridge email).
    static func refused(_ budget: Name, tenant: UUID) {
        refusals.withLock { $0[budget, default: 0] += 1 }
        if budget == .tenant {
            log.withLock { $0 }?.warning("a tenant's budget of messages outside the app is used up for today", ["tenant_id": tenant.lowercasedText])
        }
    }

    static func refusalCount(_ budget: Name) -> Int { refusals.withLock { $0[budget, default: 0] } }

    /// The counters in Prometheus text format.
    static func renderMetrics() -> String {
        var out = "# HELP roost_outside_messages_refused_total Emails and texts not sent because a budget was used up, by budget.\n"
            + "# TYPE roost_outside_messages_refused_total counter\n"
        for budget in Name.allCases { out += "roost_outside_messages_refused_total{budget=\"\(budget.rawValue)\"} \(refusalCount(budget))\n" }
        return out
    }
}
