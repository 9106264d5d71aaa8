import Foundation
import RoostHTTP
import RoostProtocol
@testable import RoostServer

/// A server on an ephemeral port with the routes a test gives and the application's error
/// mapper (`APIError.mapping`), as `roost serve` answers: APIFixture builds the API on it, and
/// the delivery tests their sinks. The transport's own tests have theirs (RoostHTTPTests'
/// TransportServer).
final class TestServer {
    let server: HTTPServer
    let port: UInt16

    init(limits: NetworkLimits = NetworkLimits(), threads: Int = 2, clock: any LoopClock = SystemClock(),
         extraRoutes: (inout Router.Builder) -> Void = { _ in }) throws {
        var limits = limits
        // Tests end with a shutdown that clients do not answer: do not wait 5 s for each.
        limits.closeTimeoutMilliseconds = min(limits.closeTimeoutMilliseconds, 300)
        // The API's tests test no idle deadline and no ping (RoostHTTPTests does, on a clock of
        // its own): a client idle through a slow step of a busy machine keeps its connection,
        // and a stream read with `receive()` meets no ping it did not ask for.
        limits.idleTimeoutMilliseconds = max(limits.idleTimeoutMilliseconds, 600_000)
        limits.pingIntervalMilliseconds = max(limits.pingIntervalMilliseconds, 600_000)
        var builder = Router.Builder()
        extraRoutes(&builder)
        server = try HTTPServer(router: builder.build(), limits: limits, addresses: [.inet(host: "127.0.0.1", port: 0)], threads: threads,
                                log: Log(level: .error), accessLog: false, errorMapper: APIError.mapping, clock: clock)
        try server.start()
        port = server.boundPorts.first ?? 0
    }

    func stop() async {
        await server.shutdown()
    }
}
