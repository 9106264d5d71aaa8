import Foundation
import RoostPersistence
import RoostProtocol

/// `/healthz`, `/readyz` and `/metrics` (API.md, "Operator").
enum OperationsRoutes {
    static func add(to builder: inout Router.Builder, pool: ConnectionPool, jobs: JobMetrics, server: @escaping @Sendable () -> HTTPServer?) {
        // Answered on the loop: load balancers poll it often, and it touches nothing.
        let healthy = Array(#"{"status":"ok"}"#.utf8)
        builder.addInline(.get, "/healthz") { _ in .json(.ok, healthy) }
        builder.add(.get, "/readyz") { _ in
            // PostgreSQL must answer within a second.
            let answered = await withTaskGroup(of: Bool.self) { group in
                // Any failure of the probe is the answer itself: not ready.
                group.addTask { (try? await pool.query("SELECT 1")) != nil }
                group.addTask {
                    try? await Task.sleep(for: .seconds(1))  // cancelled once the probe answers
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            guard answered else {
                throw APIError(.serviceUnavailable, code: "unavailable", message: "PostgreSQL did not answer within 1 s", headers: ["Retry-After": "1"])
            }
            return .json(.ok, Array(#"{"status":"ready"}"#.utf8))
        }
        builder.add(.get, "/metrics") { _ in
            var headers = HTTPHeaders()
            headers.add("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            let text = (server()?.renderMetrics(pool: pool.statistics) ?? "") + jobs.render()
            return HTTPResponse(status: .ok, headers: headers, body: Array(text.utf8))
        }
    }
}
