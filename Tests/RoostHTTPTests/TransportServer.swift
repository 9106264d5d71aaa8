import Foundation
import RoostProtocol
@testable import RoostHTTP
import RoostTestSupport
import Synchronization

/// A server on an ephemeral port with routes made for testing the network core, and an error
/// mapper of its own in place of the application's (RoostHTTP knows nothing of the database).
final class TransportServer {
    let server: HTTPServer
    let port: UInt16
    /// Released by tests to let `/hold` handlers finish.
    let gate = DispatchSemaphore(value: 0)

    /// With one loop, a round trip on another connection means the loop has read every byte
    /// sent before it (loopback delivers a send at once) and run every timer the clock has
    /// passed: what a test sent is seen before time moves. The probe is counted out again
    /// before this returns.
    /// Returns the bytes the probe's answer took, which the server's `bytesWritten` counts too.
    @discardableResult
    func settle() async -> Int {
        guard let probe = try? TestClient(port: port) else { return 0 }
        probe.send("GET /inline HTTP/1.1\r\nConnection: close\r\n\r\n")
        _ = await probe.readResponse()
        _ = await probe.waitForClose()
        return probe.bytesRead
    }

    init(
        limits: NetworkLimits = NetworkLimits(), threads: Int = 2,
        addresses: [ListenAddress] = [.inet(host: "127.0.0.1", port: 0)],
        accept: @escaping Listener.Accept = Socket.accept,
        clock: any LoopClock = SystemClock(),
        observers: [any RequestObserver] = [],
        extraRoutes: (inout Router.Builder) -> Void = { _ in }
    ) throws {
        var limits = limits
        // Tests end with a shutdown that clients do not answer: do not wait 5 s for each.
        limits.closeTimeoutMilliseconds = min(limits.closeTimeoutMilliseconds, 300)
        var builder = Router.Builder()
        extraRoutes(&builder)
        builder.add(.get, "/hello") { _ in .json(.ok, Array(#"{"hello":"neighbour"}"#.utf8)) }
        builder.addInline(.get, "/inline") { context in .json(.ok, Array("{\"route\":\"\(context.route)\"}".utf8)) }
        builder.add(.get, "/sleep/{ms:int}") { context in
            // A slow handler: the server's side of a test, not the test waiting.
            try await Task.sleep(for: .milliseconds(context.parameters.int("ms")!))
            return .json(.ok, Array("{\"slept\":\(context.parameters.int("ms")!)}".utf8))
        }
        let gate = self.gate
        builder.add(.get, "/hold") { _ in
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    gate.wait()
                    continuation.resume()
                }
            }
            return .json(.ok, Array(#"{"held":true}"#.utf8))
        }
        builder.add(.get, "/big/{bytes:int}") { context in
            let count = Int(context.parameters.int("bytes")!)
            return HTTPResponse(status: .ok, body: (0..<count).map { UInt8(truncatingIfNeeded: $0 % 251) })
        }
        builder.add(.post, "/echo") { context in HTTPResponse(status: .ok, body: context.request.body) }
        builder.add(.post, "/upload", bodyLimit: 16 << 20, streamedBody: true) { context in
            var count = 0
            while let part = try await context.bodyStream?.next() { count += part.count }
            return .json(.ok, Array("{\"bytes\":\(count)}".utf8))
        }
        builder.add(.get, "/stream/{pieces:int}") { context in
            .streamed(.ok, headers: ["Content-Type": "application/octet-stream"], CountingSource(pieces: Int(context.parameters.int("pieces")!)))
        }
        builder.add(.get, "/broken-stream") { _ in .streamed(.ok, CountingSource(pieces: 1000, failAt: 3)) }
        builder.add(.post, "/decode") { context in
            let body = try context.decodeJSON(DecodedBody.self)
            return .json(.ok, Array("{\"text\":\(body.text.count),\"places\":\(body.places?.count ?? 0)}".utf8))
        }
        builder.add(.get, "/teapot") { _ in throw APIError(.conflict, code: .conflict, message: "already brewing") }
        builder.add(.get, "/crash") { _ in throw CancellationError() }
        builder.add(.get, "/unavailable") { _ in throw Unavailable() }
        server = try HTTPServer(
            router: builder.build(), limits: limits, addresses: addresses, threads: threads,
            log: Log(level: .error), accessLog: false, observers: observers, errorMapper: Self.mapper, clock: clock, accept: accept)
        try server.start()
        port = server.boundPorts.first ?? 0
    }

    /// An error of the "application's" own kind, which only the mapper knows how to answer.
    struct Unavailable: Error {}

    static let mapper: ErrorMapper = { error in
        error is Unavailable ? APIError(.serviceUnavailable, code: .unavailable, message: "the store is away", headers: ["Retry-After": "1"]) : nil
    }

    func stop() async {
        for _ in 0..<64 { gate.signal() }
        await server.shutdown()
    }
}
