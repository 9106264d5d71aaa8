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
        for _ in 0..<5 {
            do {
                let outcome = try await pool.withConnection { connection in
                    try connection.withTenantTransaction(tenant) { try alert.run(by: bridge, tenant: tenant, on: $0) }
                }
                if case .created = outcome { DeliveryBell.shared.ring() }
                return outcome
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
