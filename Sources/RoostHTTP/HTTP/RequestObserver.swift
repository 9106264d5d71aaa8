import Foundation

/// A request the server answered, as the connection reports it once its response is written
/// into the connection's queue.
public struct CompletedRequest: Sendable {
    public let requestID: String
    public let method: String
    /// The route's pattern (`/v1/groups/{gid:uuid}`), or `-` when none matched.
    public let route: String
    public let status: Int
    /// From the request's arrival to its response, on the loop's clock.
    public let nanoseconds: UInt64
    public let bodyBytes: Int
    public let peer: String
    /// The path asked for (never its query, which may carry a token), when no route matched;
    /// at most 200 characters.
    public var path: String? = nil
}

/// What the server does with every answered request, apart from the connection that answered
/// it: the metrics and the access log are observers, and the application may add its own
/// (`HTTPServer(observers:)`). Called on the connection's loop: keep it short, never block.
public protocol RequestObserver: Sendable {
    func completed(_ request: CompletedRequest)
}

/// `roost_http_requests_total` and the latency histogram of `/metrics`.
struct RequestMetrics: RequestObserver {
    let metrics: ServerMetrics

    func completed(_ request: CompletedRequest) {
        metrics.recordRequest(method: request.method, route: request.route, status: request.status, seconds: Double(request.nanoseconds) / 1e9)
    }
}

/// One `request` line per answered request (`ROOST_ACCESS_LOG`).
struct AccessLog: RequestObserver {
    let log: Log

    func completed(_ request: CompletedRequest) {
        var fields = [
            "request_id": request.requestID, "method": request.method, "route": request.route, "status": String(request.status),
            "duration_ms": String(format: "%.3f", Double(request.nanoseconds) / 1e6),
            "bytes": String(request.bodyBytes), "peer": request.peer,
        ]
        if let path = request.path { fields["path"] = path }
        log.info("request", fields)
    }
}
