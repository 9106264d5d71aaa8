import Foundation
import RoostPersistence
import RoostProtocol

/// Applies a bridge's events, whichever door they came in by (Roost's own body, PagerDuty,
/// Alertmanager, a hook URL): each in a transaction of the bridge's tenant, after the request
/// was admitted and every event in it validated, so a bad one refuses the request before
/// anything is written.
struct BridgeIntake: Sendable {
    let pool: ConnectionPool

    /// Applies one event.
    func apply(_ alert: BridgeAlert, by bridge: Bridge, tenant: UUID) async throws -> BridgeAlert.Outcome {
        let outcome = try await retrying(tenant) { try alert.run(by: bridge, tenant: tenant, on: $0) }
        Self.ringIfNew(outcome)
        return outcome
    }

    /// Applies one event that came without a request (an MQTT publication), taking a token of
    /// the bridge's rate limit in the same transaction: the outcome, or the seconds to wait
    /// when the bridge is past its rate (nothing written).
    func applySpending(_ alert: BridgeAlert, by bridge: Bridge, tenant: UUID) async throws -> Result<BridgeAlert.Outcome, RateLimited> {
        let result: Result<BridgeAlert.Outcome, RateLimited> = try await retrying(tenant) { connection in
            if let wait = try BridgeStore().consumeToken(bridge.id, on: connection) { return .failure(RateLimited(seconds: wait)) }
            return .success(try alert.run(by: bridge, tenant: tenant, on: connection))
        }
        if case .success(let outcome) = result { Self.ringIfNew(outcome) }
        return result
    }

    struct RateLimited: Error { let seconds: Int }

    /// A new alert's pushes wait in the outbox: the delivery engine is woken once its
    /// transaction committed.
    private static func ringIfNew(_ outcome: BridgeAlert.Outcome) {
        if case .created = outcome { DeliveryBell.shared.ring() }
    }

    /// Runs `body` in a transaction of the tenant. Twenty triggers at once race on the partial
    /// unique index of open alerts; the losers' transactions roll back and run again, as repeats.
    private func retrying<Value: Sendable>(_ tenant: UUID, _ body: @escaping @Sendable (PostgresConnection) throws -> Value) async throws -> Value {
        for _ in 0..<5 {
            do {
                return try await pool.withConnection { try $0.withTenantTransaction(tenant, body) }
            } catch let error as DatabaseError where error.code == .uniqueViolation {
                continue
            }
        }
        throw APIError(.conflict, code: .conflict, message: "the alert changed under this request; send it again")
    }

    /// Applies the events in order; their outcomes.
    func apply(_ alerts: [BridgeAlert], by bridge: Bridge, tenant: UUID) async throws -> [BridgeAlert.Outcome] {
        var outcomes: [BridgeAlert.Outcome] = []
        for alert in alerts { outcomes.append(try await apply(alert, by: bridge, tenant: tenant)) }
        return outcomes
    }
}
