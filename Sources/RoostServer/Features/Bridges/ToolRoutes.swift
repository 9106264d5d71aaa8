import Foundation
import RoostHTTP
import RoostProtocol

/// The doors for tools that already speak a protocol of their own (API.md "Bridges, extended"):
/// PagerDuty Events API v2 and Alertmanager's webhook. Each is admitted as its bridge (rate
/// limit, heartbeat) and validated whole before any event is applied.
struct ToolRoutes: Sendable {
    let bridges: BridgeAuthentication
    let intake: BridgeIntake

    func add(to builder: inout Router.Builder) {
        // PagerDuty's own path, so a tool changes only its host; and one under Roost's bridge paths.
        for path in ["/v2/enqueue", "/v1/bridge/pagerduty"] {
            builder.add(.post, path, bodyLimit: 512 * 1024) { context in try await pagerDuty(context) }
        }
        builder.add(.post, "/v1/bridge/alertmanager", bodyLimit: 1024 * 1024) { context in
            let notification = try AlertmanagerNotification(context.request.body)
            let (tenant, bridge) = try await bridges.admit(context)
            var (triggered, resolved) = (0, 0)
            for outcome in try await intake.apply(notification.alerts, by: bridge, tenant: tenant) {
                switch outcome {
                case .created, .repeated: triggered += 1
                case .resolved: resolved += 1
                case .nothingOpen: break
                }
            }
            return .json(.ok, Array("{\"triggered\":\(triggered),\"resolved\":\(resolved)}".utf8))
        }
    }

    private func pagerDuty(_ context: RequestContext) async throws -> HTTPResponse {
        let event: PagerDutyEvent
        do { event = try PagerDutyEvent(context.request.body) } catch { return PagerDutyEvent.refusal(error) }
        do {
            let (tenant, bridge) = try await bridges.admit(context, credential: .key(event.routingKey))
            if let alert = event.alert { _ = try await intake.apply(alert, by: bridge, tenant: tenant) }
            return PagerDutyEvent.accepted(event.dedupKey)
        } catch let error as APIError {
            return PagerDutyEvent.refusal(error)
        }
    }
}
