import Foundation
import RoostPersistence
import RoostProtocol

/// `/healthz`, `/readyz` and `/metrics` (API.md, "Operator").
enum OperationsRoutes {
    static func add(to builder: inout Router.Builder, pool: ConnectionPool, server: @escaping @Sendable () -> HTTPServer?) {
        // Answered on the loop: load balancers poll it often, and it touches nothing.
        let healthy = Array(#"{"status":"ok"}"#.utf8)
        builder.addInline(.get, "/healthz") { _ in .json(.ok, healthy) }
        builder.add(.get, "/readyz") { _ in
            // PostgreSQL must answer within a second.
            let answered = await withTaskGroup(of: Bool.self) { group in
                group.addTask { (try? await pool.query("SELECT 1")) != nil }
                group.addTask {
                    try? await Task.sleep(for: .seconds(1))
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
            let pool = pool.statistics
            var text = ""
            func metric(_ name: String, _ help: String, _ type: String, _ value: Int) {
                text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
            }
            if let server = server() {
                metric("roost_open_connections", "Open client connections.", "gauge", server.openConnections)
                metric("roost_requests_total", "HTTP requests answered.", "counter", server.requestsServed)
                metric("roost_handlers_running", "Request handlers running now.", "gauge", server.runningHandlers)
            }
            metric("roost_db_pool_open", "PostgreSQL connections open.", "gauge", pool.open)
            metric("roost_db_pool_in_use", "PostgreSQL connections lent out.", "gauge", pool.inUse)
            metric("roost_db_pool_waiting", "Callers waiting for a PostgreSQL connection.", "gauge", pool.waiting)
            var headers = HTTPHeaders()
            headers.add("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            return HTTPResponse(status: .ok, headers: headers, body: Array(text.utf8))
        }
    }
}
