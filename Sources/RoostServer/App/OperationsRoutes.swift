import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// `/healthz` and `/readyz` on the public listener, `/metrics` on the operator's metrics listener
/// (`ROOST_METRICS_LISTEN`), never on the public one (API.md, "Operator").
enum OperationsRoutes {
    static func add(to builder: inout Router.Builder, probe: ReadinessProbe) {
        // Answered on the loop: load balancers poll it often, and it touches nothing.
        let healthy = Array(#"{"status":"ok"}"#.utf8)
        builder.addInline(.get, "/healthz") { _ in .json(.ok, healthy) }
        builder.add(.get, "/readyz") { _ in
            if let reason = await probe.ready() {
                throw APIError(.serviceUnavailable, code: .unavailable, message: reason, headers: ["Retry-After": "1"])
            }
            return .json(.ok, Array(#"{"status":"ready"}"#.utf8))
        }
    }

    /// The metrics listener's one route.
    static func addMetrics(to builder: inout Router.Builder, pool: ConnectionPool, jobs: JobMetrics, deliveries: DeliveryMetrics, hub: StreamHub,
                           schema: Int? = nil, server: @escaping @Sendable () -> HTTPServer?) {
        let build = RoostBuild.metric(schema: schema)
        builder.add(.get, "/metrics") { _ in
            var headers = HTTPHeaders()
            headers.add("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            // The database away leaves the lanes' waits out of this scrape, nothing else.
            let waiting = (try? await pool.withConnection { try OutboxStore().oldestWaiting(on: $0) }) ?? [:]
            let text = (server()?.renderMetrics(pool: pool.statistics) ?? "") + jobs.render() + deliveries.render(waiting: waiting)
                + OutsideBudget.renderMetrics() + renderFanout(hub) + (MQTTBridges.running.withLock { $0 }?.renderMetrics() ?? "")
                + (DC09Receiver.running.withLock { $0 }?.renderMetrics() ?? "")
                + build + ProcessMetrics.render()
            return HTTPResponse(status: .ok, headers: headers, body: Array(text.utf8))
        }
    }

    private static func renderFanout(_ hub: StreamHub) -> String {
        "# HELP roost_fanout_groups_behind_total Groups the fanout's audit found still behind their log after its wait "
            + "(a chat line's notice lost, or very late), each then read from the log.\n"
            + "# TYPE roost_fanout_groups_behind_total counter\n"
            + "roost_fanout_groups_behind_total \(hub.groupsFoundBehind)\n"
            + "# HELP roost_fanout_log_regressions_total Groups whose log was found shorter than what this node had delivered "
            + "(events lost in a failover to a standby that lacked them); their streams were told to reset.\n"
            + "# TYPE roost_fanout_log_regressions_total counter\n"
            + "roost_fanout_log_regressions_total \(hub.logRegressions)\n"
    }
}
