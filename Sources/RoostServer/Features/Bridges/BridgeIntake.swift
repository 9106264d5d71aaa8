import Foundation
import RoostPersistence
import RoostProtocol

/// Applies a bridge's events, whichever door they came in by (Roost's own body, PagerDuty,
/// Alertmanager, a hook URL): each in a transaction of the bridge's tenant, after the request
/// was admitted and every event in it validated, so a bad one refuses the request before
/// anything is written.
struct BridgeIntake: Sendable {
    let pool: ConnectionPool

    /// Applies one event. Twenty triggers at once race on the partial unique index of open
    /// alerts; the losers' transactions roll back and retry, as repeats.
    func apply(_ alert: BridgeAlert, by bridge: Bridge, tenant: UUID) async throws -> BridgeAlert.Outcome {
        guard let outcome = try await apply(alert, by: bridge, tenant: tenant, spending: false).outcome else {
            preconditionFailure("an event that spends nothing always runs")
        }
        return outcome
    }

    /// Applies one event that came without a request (an MQTT publication), taking a token of
    /// the bridge's rate limit in the same transaction: the outcome, or the seconds to wait
    /// when the bridge is past its rate (nothing written).
    func applySpending(_ alert: BridgeAlert, by bridge: Bridge, tenant: UUID) async throws -> (outcome: BridgeAlert.Outcome?, wait: Int?) {
        try await apply(alert, by: bridge, tenant: tenant, spending: true)
    }

    private func apply(_ alert: BridgeAlert, by bridge: Bridge, tenant: UUID, spending: Bool) async throws
        -> (outcome: BridgeAlert.Outcome?, wait: Int?)
    {
        for _ in 0..<5 {
            do {
                let result = try await pool.withConnection { connection in
                    try connection.withTenantTransaction(tenant) { connection -> (outcome: BridgeAlert.Outcome?, wait: Int?) in
                        if spending, let wait = try BridgeStore().consumeToken(bridge.id, on: connection) { return (nil, wait) }
                        return (try alert.run(by: bridge, tenant: tenant, on: connection), nil)
                    }
                }
                if case .created? = result.outcome { DeliveryBell.shared.ring() }
                return result
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
