import Foundation
import RoostTestSupport
import RoostProtocol
@testable import RoostHTTP
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

struct DecodedBody: Decodable {
    struct Place: Decodable { let lat: Double }
    let text: String
    let count: Int
    let places: [Place]?
}

@Suite(.serialized)
struct HTTPServerTests {
    @Test func keepAliveServesSeveralRequestsOnOneConnection() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        for _ in 0..<3 {
            client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(await client.readResponse())
            #expect(response.status == 200)
            #expect(response.text == #"{"hello":"neighbour"}"#)
            #expect(response.headers["connection"] == "keep-alive")
        }
        await test.stop()
    }

    @Test func pipelinedResponsesComeBackInRequestOrder() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        // The first handler is the slowest; the answers must still come back in order.
        client.send("GET /sleep/300 HTTP/1.1\r\n\r\nGET /sleep/1 HTTP/1.1\r\n\r\nGET /hello HTTP/1.1\r\n\r\nPOST /echo HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd")
        var bodies: [String] = []
        for _ in 0..<4 { if let text = await client.readResponse()?.text { bodies.append(text) } }
        #expect(bodies == [#"{"slept":300}"#, #"{"slept":1}"#, #"{"hello":"neighbour"}"#, "abcd"])
        await test.stop()
    }

    @Test func unknownPathsAndMethodsGetTheJSONErrorShape() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        client.send("GET /nope HTTP/1.1\r\n\r\n")
        let missing = try #require(await client.readResponse())
        #expect(missing.status == 404)
        #expect(missing.text.hasPrefix(#"{"error":{"code":"not_found""#))
        client.send("DELETE /hello HTTP/1.1\r\n\r\n")
        let wrongMethod = try #require(await client.readResponse())
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers["allow"] == "GET")
        client.send("GET /sleep/abc HTTP/1.1\r\n\r\n")
        #expect(await client.readResponse()?.status == 404)
        client.send("GET /teapot HTTP/1.1\r\n\r\n")
        let conflict = try #require(await client.readResponse())
        #expect(conflict.status == 409)
        #expect(conflict.text == #"{"error":{"code":"conflict","message":"already brewing"}}"#)
        await test.stop()
    }

    @Test func aHandlerFailureIsA500ThatNamesTheRequestAndTheServerKeepsServing() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        client.send("GET /crash HTTP/1.1\r\nX-Request-Id: trace-123\r\n\r\n")
        let failed = try #require(await client.readResponse())
        #expect(failed.status == 500)
        #expect(failed.headers["x-request-id"] == "trace-123")
        #expect(failed.text.contains("trace-123"))
        client.send("GET /hello HTTP/1.1\r\n\r\n")
        #expect(await client.readResponse()?.status == 200)
        await test.stop()
    }

    /// The transport answers an error of the application's own kind as the application's mapper
    /// says (RoostServer maps an unreachable database to 503: APIErrorMappingTests).
    @Test func anErrorTheApplicationMapsIsAnsweredAsItsMapperSays() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        client.send("GET /unavailable HTTP/1.1\r\n\r\n")
        let response = try #require(await client.readResponse())
        #expect(response.status == 503)
        #expect(response.headers["retry-after"] == "1")
        #expect(response.text.contains(#""code":"unavailable""#))
        await test.stop()
    }

    @Test func aMalformedRequestGets400AndTheConnectionCloses() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        client.send("POST /echo HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n")
        let response = try #require(await client.readResponse())
        #expect(response.status == 400)
        #expect(response.headers["connection"] == "close")
        #expect(await client.waitForClose())
        // Others are unaffected.
        let other = try TestClient(port: test.port)
        other.send("GET /hello HTTP/1.1\r\n\r\n")
        #expect(await other.readResponse()?.status == 200)
        await test.stop()
    }

    @Test func aTooLargeBodyGets413() async throws {
        var limits = NetworkLimits()
        limits.maxBodyBytes = 1024
        let test = try TransportServer(limits: limits)
        let client = try TestClient(port: test.port)
        client.send("POST /echo HTTP/1.1\r\nContent-Length: 5000\r\n\r\n")
        let response = try #require(await client.readResponse())
        #expect(response.status == 413)
        #expect(response.text.contains("payload_too_large"))
        await test.stop()
    }

    // MARK: - Deadlines, on a manual clock (time is moved on, never waited for)

    /// Collects what the server reports of each answered request.
    final class Recorder: RequestObserver, @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [CompletedRequest] = []
        func completed(_ request: CompletedRequest) { lock.withLock { seen.append(request) } }
        var requests: [CompletedRequest] { lock.withLock { seen } }
    }

    @Test func everyAnsweredRequestReachesTheObserversOnTheLoopsClock() async throws {
        let (recorder, clock) = (Recorder(), ManualClock())
        let test = try TransportServer(threads: 1, clock: clock, observers: [recorder])
        let client = try TestClient(port: test.port)
        client.send("GET /hello HTTP/1.1\r\nX-Request-Id: first\r\n\r\n")
        #expect(await client.readResponse()?.status == 200)
        client.send("DELETE /hello HTTP/1.1\r\n\r\nGET /nowhere HTTP/1.1\r\n\r\n")
        #expect(await client.readResponse()?.status == 405)
        #expect(await client.readResponse()?.status == 404)
        client.send("NOT A REQUEST\r\n\r\n")
        let refused = await client.readResponse()?.status
        #expect(refused == 400)
        await test.settle()
        let seen = recorder.requests.filter { $0.route != "/inline" }
        #expect(seen.map(\.status).prefix(3) == [200, 405, 404], "\(seen.map(\.status))")
        #expect(seen.first?.requestID == "first" && seen.first?.route == "/hello" && seen.first?.method == "GET")
        #expect(seen.first?.bodyBytes == #"{"hello":"neighbour"}"#.utf8.count && seen.first?.peer.hasPrefix("127.0.0.1") == true)
        #expect(seen.allSatisfy { $0.nanoseconds == 0 }, "the manual clock did not move")
        #expect(seen.count == 4 && seen.last?.status == refused && seen.last?.route == "-", "a request that does not parse is reported too")
        #expect(test.server.requestsServed == recorder.requests.count)
        await test.stop()
    }

    @Test func aTrickledRequestIsClosedAtTheHeaderDeadlineWhileOthersAreServed() async throws {
        var limits = NetworkLimits()
        limits.headerTimeoutMilliseconds = 400
        let clock = ManualClock()
        let test = try TransportServer(limits: limits, threads: 1, clock: clock)
        // Just inside the deadline the request is still taken.
        let inTime = try TestClient(port: test.port)
        inTime.send("GET /hello HTTP/1.1\r\nX-Slow: ")
        await test.settle()
        clock.advance(milliseconds: 399)
        inTime.send("a\r\n\r\n")
        #expect(await inTime.readResponse()?.status == 200)
        // More bytes do not buy more time: the deadline runs from the first byte.
        let slow = try TestClient(port: test.port)
        slow.send("GET /hello HTTP/1.1\r\nX-Slow: ")
        await test.settle()
        clock.advance(milliseconds: 300)
        slow.send("aaaa")
        await test.settle()
        clock.advance(milliseconds: 100)
        #expect(await slow.waitForClose())
        // Others are served meanwhile and after.
        let normal = try TestClient(port: test.port)
        normal.send("GET /hello HTTP/1.1\r\n\r\n")
        #expect(await normal.readResponse()?.status == 200)
        await test.stop()
    }

    /// An upload's head, asking for `100 Continue`: the interim answer says the upload holds a slot.
    func startUpload(_ test: TransportServer, bytes: Int = 100_000) async throws -> TestClient {
        let client = try TestClient(port: test.port)
        client.send("POST /upload HTTP/1.1\r\nContent-Length: \(bytes)\r\nExpect: 100-continue\r\n\r\n")
        return client
    }

    @Test func trickledUploadsTakeSlotsOfTheirOwnAndLeaveTheHandlersToEveryoneElse() async throws {
        var limits = NetworkLimits()
        limits.maxConcurrentHandlers = 4
        limits.maxConcurrentUploads = 6
        let clock = ManualClock()  // time stands still: no upload is cut while the test runs
        let test = try TransportServer(limits: limits, threads: 1, clock: clock)
        var uploads: [TestClient] = []
        for _ in 0..<6 {
            let upload = try await startUpload(test)
            #expect(await upload.readResponseHeadOnly()?.status == 100)
            upload.send("x")
            uploads.append(upload)
        }
        // The node's upload slots are taken: one more is 503 at once, with Retry-After.
        let extra = try await startUpload(test)
        let refused = await extra.readResponse()
        #expect(refused?.status == 503 && refused?.headers["retry-after"] == "1")
        // Every other request is still served, more of them than there are handler slots.
        for _ in 0..<8 {
            let other = try TestClient(port: test.port)
            other.send("GET /hello HTTP/1.1\r\nConnection: close\r\n\r\n")
            #expect(await other.readResponse()?.status == 200)
        }
        // The uploads finish when their bytes come.
        for upload in uploads {
            upload.send([UInt8](repeating: 0x61, count: 99_999))
            let answer = await upload.readResponse()
            #expect(answer?.status == 200 && answer.map { String(decoding: $0.body, as: UTF8.self) } == #"{"bytes":100000}"#)
        }
        await test.stop()
    }

    @Test func anUploadUnderTheMinimumRateOverAWindowIsCutWith408() async throws {
        var limits = NetworkLimits()
        limits.minUploadBytesPerSecond = 1024
        limits.uploadRateWindowMilliseconds = 30_000
        let clock = ManualClock()
        let test = try TransportServer(limits: limits, threads: 1, clock: clock)
        let (slow, steady) = (try await startUpload(test), try await startUpload(test))
        #expect(await slow.readResponseHeadOnly()?.status == 100)
        #expect(await steady.readResponseHeadOnly()?.status == 100)
        slow.send("x")
        // Six ticks of 5 s: the steady one sends 2 KiB/s, the slow one nothing more.
        for _ in 0..<6 {
            steady.send([UInt8](repeating: 0x61, count: 10_240))
            await test.settle()
            clock.advance(milliseconds: 5_000)
            await test.settle()
        }
        let cut = await slow.readResponse()
        #expect(cut?.status == 408 && cut.map { String(decoding: $0.body, as: UTF8.self).contains("too slow") } == true)
        #expect(await slow.waitForClose())
        steady.send([UInt8](repeating: 0x61, count: 100_000 - 61_440))
        let finished = await steady.readResponse()
        #expect(finished?.status == 200, Comment(rawValue: finished.map { String(decoding: $0.body, as: UTF8.self) } ?? "none"))
        await test.stop()
    }

    @Test func anIdleKeepAliveConnectionIsClosed() async throws {
        var limits = NetworkLimits()
        limits.idleTimeoutMilliseconds = 300
        let clock = ManualClock()
        let test = try TransportServer(limits: limits, threads: 1, clock: clock)
        let client = try TestClient(port: test.port)
        client.send("GET /hello HTTP/1.1\r\n\r\n")
        #expect(await client.readResponse()?.status == 200)
        await test.settle()
        // Idle for just under the timeout: still served, and the request starts the wait again.
        clock.advance(milliseconds: 299)
        client.send("GET /hello HTTP/1.1\r\n\r\n")
        #expect(await client.readResponse()?.status == 200)
        await test.settle()
        clock.advance(milliseconds: 299)
        await test.settle()
        #expect(test.server.openConnections == 1)
        clock.advance(milliseconds: 1)
        #expect(await client.waitForClose())
        await test.stop()
    }

    @Test func aResponseLargerThanTheSocketBufferReachesASlowReaderIntact() async throws {
        let test = try TransportServer()
        // Intactness, not speed: a suite loading both cores may leave a read waiting past 10 s.
        let client = try TestClient(port: test.port, receiveBuffer: 4096, receiveTimeoutSeconds: 60)
        let size = 8 * 1024 * 1024
        client.send("GET /big/\(size) HTTP/1.1\r\n\r\n")
        // The server fills the socket and waits for EPOLLOUT with the rest queued.
        #expect(try await Poll.until(every: .milliseconds(5)) { test.server.queuedBytes > 0 })
        let response = try #require(await client.readResponse())
        #expect(response.body.count == size)
        #expect(response.body.enumerated().allSatisfy { $0.element == UInt8(truncatingIfNeeded: $0.offset % 251) })
        await test.stop()
    }

    /// A client that asks for a large response and never reads it cannot hold the connection:
    /// pending output runs the idle deadline, restarted by every write that makes progress.
    @Test func aClientThatNeverReadsItsResponseIsClosedAtTheIdleDeadline() async throws {
        var limits = NetworkLimits()
        limits.idleTimeoutMilliseconds = 300
        let clock = ManualClock()
        let test = try TransportServer(limits: limits, threads: 1, clock: clock)
        let client = try TestClient(port: test.port, receiveBuffer: 4096)
        // Many pipelined requests: reading them pauses while answers back up, and asking for
        // more never buys more time.
        client.send(String(repeating: "GET /big/\(1024 * 1024) HTTP/1.1\r\n\r\n", count: 50))
        // First a request is taken and its response fills the socket...
        #expect(try await Poll.until(every: .milliseconds(5)) { test.server.requestsServed >= 1 })
        await test.settle()
        var written = test.server.bytesWritten
        clock.advance(milliseconds: 299)
        written += await test.settle()
        #expect(test.server.openConnections == 1)
        // ...then, with nothing read, the connection is closed at the deadline: on the server
        // first (the loop has run its timer once `settle` returns), and only then does the client
        // read. Reading earlier would free room in the socket, and the write progress that makes
        // would rightly restart the deadline.
        clock.advance(milliseconds: 1)
        written += await test.settle()
        // The kernel alone can still take a few bytes into the client's buffer (a window probe,
        // on its own timers): a write that made progress (more written than the probes' answers)
        // restarted the deadline, rightly. Only then is another full timeout given, and a round
        // without any progress must end in the close.
        var rounds = 0
        while test.server.openConnections == 1 && test.server.bytesWritten != written && rounds < 20 {
            written = test.server.bytesWritten
            clock.advance(milliseconds: 300)
            written += await test.settle()
            rounds += 1
        }
        #expect(test.server.openConnections == 0, "still open after \(rounds) rounds, \(written) bytes written")
        #expect(await client.waitForClose())
        await test.stop()
    }

    @Test func pipelinedLargeResponsesAllReachAReaderThatKeepsUp() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        let size = 2 * 1024 * 1024
        client.send(String(repeating: "GET /big/\(size) HTTP/1.1\r\n\r\n", count: 10))
        var sizes: [Int] = []
        for _ in 0..<10 {
            guard let response = await client.readResponse() else { break }
            sizes.append(response.body.count)
        }
        #expect(sizes == Array(repeating: size, count: 10))
        await test.stop()
    }

    /// A streamed body (chunked) arrives whole, even to a reader slower than the producer, and
    /// the pipelined requests behind it are answered after it, in order.
    @Test func aStreamedBodyArrivesWholeAndPipelinedRequestsFollowIt() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        client.send("GET /stream/2000 HTTP/1.1\r\n\r\nGET /hello HTTP/1.1\r\n\r\nHEAD /stream/5 HTTP/1.1\r\n\r\nGET /stream/0 HTTP/1.1\r\n\r\n")
        let streamed = try #require(await client.readResponse())
        #expect(streamed.status == 200 && streamed.headers["transfer-encoding"] == "chunked" && streamed.headers["content-length"] == nil)
        #expect(streamed.body.count == 2000 * CountingSource.pieceBytes && streamed.body == CountingSource.expected(pieces: 2000))
        #expect(await client.readResponse()?.text == #"{"hello":"neighbour"}"#)
        // HEAD: the head alone (no chunks follow, so the next response parses); an empty stream: the last chunk only.
        let head = try #require(await client.readResponseHeadOnly())
        #expect(head.status == 200 && head.headers["transfer-encoding"] == "chunked")
        let empty = try #require(await client.readResponse())
        #expect(empty.status == 200 && empty.body.isEmpty)
        await test.stop()
    }

    /// A reader that stops reading holds the producer back: the source is asked for what fits the
    /// connection's bounded queue and the socket buffers, not for the whole body.
    @Test func aStalledReaderHoldsTheStreamsSourceBack() async throws {
        let source = CountingSource(pieces: 5000)  // 20 MiB
        let test = try TransportServer(extraRoutes: { builder in builder.add(.get, "/slow-stream") { _ in .streamed(.ok, source) } })
        let client = try TestClient(port: test.port, receiveBuffer: 4096, receiveTimeoutSeconds: 60)
        client.send("GET /slow-stream HTTP/1.1\r\n\r\n")
        // The server stops asking once its queue passes half the bound and the socket would
        // block; a piece already on its way may still land, so the count is read a moment later.
        let half = NetworkLimits().maxOutboundQueueBytes / 2
        #expect(try await Poll.until(every: .milliseconds(5)) { test.server.queuedBytes >= half })
        try await Poll.quiet(for: .milliseconds(200))
        let last = source.asked
        print("stalled reader: the source was asked for \(last) of 5000 pieces (\(last * 4) KiB) before the reader read")
        #expect(last < 2000, "asked for \(last) pieces of a body nobody read")
        let response = try #require(await client.readResponse())
        #expect(response.body.count == 5000 * CountingSource.pieceBytes && source.asked == 5001)
        await test.stop()
    }

    /// A source that fails mid-body closes the connection before the last chunk: the client
    /// cannot mistake the cut body for a whole one. The server keeps serving.
    @Test func aStreamThatFailsEndsTheConnectionWithoutTheLastChunk() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        client.send("GET /broken-stream HTTP/1.1\r\n\r\n")
        #expect(await client.readResponse() == nil, "no complete response")
        let other = try TestClient(port: test.port)
        other.send("GET /hello HTTP/1.1\r\n\r\n")
        #expect(await other.readResponse()?.status == 200)
        await test.stop()
    }

    @Test func whenEveryHandlerSlotIsTakenNewRequestsGet503WithRetryAfter() async throws {
        var limits = NetworkLimits()
        limits.maxConcurrentHandlers = 1
        let test = try TransportServer(limits: limits)
        let holder = try TestClient(port: test.port)
        holder.send("GET /hold HTTP/1.1\r\n\r\n")
        #expect(try await Poll.until(every: .milliseconds(5)) { test.server.runningHandlers >= 1 })
        let client = try TestClient(port: test.port)
        client.send("GET /hello HTTP/1.1\r\n\r\n")
        let busy = try #require(await client.readResponse())
        #expect(busy.status == 503)
        #expect(busy.headers["retry-after"] == "1")
        test.gate.signal()
        #expect(await holder.readResponse()?.status == 200)
        client.send("GET /hello HTTP/1.1\r\n\r\n")
        #expect(await client.readResponse()?.status == 200)
        await test.stop()
    }

    @Test func inlineRoutesAnswerInOrderAmongPipelinedCalls() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        client.send("GET /sleep/100 HTTP/1.1\r\n\r\nGET /inline HTTP/1.1\r\n\r\n")
        #expect(await client.readResponse()?.text == #"{"slept":100}"#)
        #expect(await client.readResponse()?.text == #"{"route":"/inline"}"#)
        await test.stop()
    }

    @Test func metricsCountRequestsByRouteAndStatus() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        for path in ["/hello", "/hello", "/nope", "/teapot"] {
            client.send("GET \(path) HTTP/1.1\r\n\r\n")
            _ = await client.readResponse()
        }
        let text = test.server.renderMetrics(pool: (open: 0, inUse: 0, waiting: 0))
        #expect(text.contains(#"roost_requests_total{method="GET",route="/hello",status="200"} 2"#))
        #expect(text.contains(#"roost_requests_total{method="GET",route="-",status="404"} 1"#))
        #expect(text.contains(#"roost_requests_total{method="GET",route="/teapot",status="409"} 1"#))
        // The latency histogram by route, method and status class, so an alert can name a route.
        #expect(text.contains(#"roost_request_duration_seconds_count{method="GET",route="/hello",status_class="2xx"} 2"#))
        #expect(text.contains(#"roost_request_duration_seconds_bucket{method="GET",route="/teapot",status_class="4xx",le="+Inf"} 1"#))
        #expect(text.contains(#"roost_request_duration_seconds_count{method="GET",route="-",status_class="4xx"} 1"#))
        #expect(text.contains(#"roost_open_connections{kind="http"} 1"#))
        await test.stop()
    }

    @Test func connectionsBeyondThePerAddressLimitGet503() async throws {
        var limits = NetworkLimits()
        limits.maxConnectionsPerAddress = 2
        let test = try TransportServer(limits: limits)
        // Two loops accept in either order: make sure the first two are in before the third.
        let first = try TestClient(port: test.port)
        let second = try TestClient(port: test.port)
        for client in [first, second] {
            client.send("GET /hello HTTP/1.1\r\n\r\n")
            #expect(await client.readResponse()?.status == 200)
        }
        let third = try TestClient(port: test.port)
        let refused = try #require(await third.readResponse())
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "1")
        await test.stop()
    }

    @Test func runningOutOfDescriptorsPausesAcceptingInsteadOfSpinning() async throws {
        // accept4 fails with EMFILE for 300 ms while a client waits in the backlog (its listening
        // socket stays readable throughout): the listener must pause, not retry at every wake-up.
        let attempts = Atomic<Int>(0)
        let failUntil = EventLoop.monotonicNow() + 300_000_000
        let test = try TransportServer(threads: 1, accept: { fd throws(SystemError) in
            attempts.add(1, ordering: .relaxed)
            if EventLoop.monotonicNow() < failUntil { throw SystemError(call: "accept4", errno: EMFILE) }
            return try Socket.accept(fd)
        })
        let client = try TestClient(port: test.port)
        client.send("GET /hello HTTP/1.1\r\n\r\n")
        #expect(await client.readResponse()?.status == 200)
        // 100 ms pauses: about four failed attempts in 300 ms (spinning made millions a minute).
        #expect(attempts.load(ordering: .relaxed) <= 10)
        let metrics = test.server.renderMetrics(pool: (open: 0, inUse: 0, waiting: 0))
        let pauses = metrics.split(separator: "\n").first { $0.hasPrefix("roost_accept_pauses_total ") }
        #expect(pauses.flatMap { Int($0.split(separator: " ")[1]) }.map { (2...6).contains($0) } == true)
        await test.stop()
    }

    @Test(arguments: [
        (#"{"text":"hi","count":1}"#, 200, "", ""),
        (#"{"text":"hi""#, 400, "invalid_json", ""),
        ("not json", 400, "invalid_json", ""),
        (#"{"count":1}"#, 400, "validation_failed", "text"),
        (#"{"text":5,"count":1}"#, 400, "validation_failed", "text"),
        (#"{"text":"hi","count":null}"#, 400, "validation_failed", "count"),
        (#"{"text":"hi","count":1,"places":[{"lat":1},{"lat":"north"}]}"#, 400, "validation_failed", "places.1.lat"),
    ])
    func jsonBodiesDecodeOrNameTheFieldAtFault(body: String, status: Int, code: String, field: String) async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        client.send("POST /decode HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        let response = try #require(await client.readResponse())
        #expect(response.status == status)
        if !code.isEmpty { #expect(response.text.contains("\"code\":\"\(code)\"")) }
        if !field.isEmpty { #expect(response.text.contains("\"field\":\"\(field)\"")) }
        await test.stop()
    }

    @Test func aNonJSONContentTypeGets415() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        client.send("POST /decode HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi")
        #expect(await client.readResponse()?.status == 415)
        await test.stop()
    }

    @Test func ipv6AndUnixSocketListenersServeToo() async throws {
        let path = NSTemporaryDirectory() + "roost-test-\(UUID().uuidString.prefix(8)).sock"
        var addresses: [ListenAddress] = [.unix(path: path)]
        // Only where the loopback has ::1 (some containers run without IPv6).
        let hasIPv6 = (try? String(contentsOfFile: "/proc/net/if_inet6", encoding: .utf8))?
            .contains("00000000000000000000000000000001") ?? false
        if hasIPv6 { addresses.append(.inet6(host: "::1", port: 0)) }
        let test = try TransportServer(addresses: addresses)
        let unixAnswer = await offload { () -> String? in
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
            let ok = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard ok == 0 else { return nil }
            let request = Array("GET /hello HTTP/1.1\r\nConnection: close\r\n\r\n".utf8)
            _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            var buffer = [UInt8](repeating: 0, count: 4096)
            var received: [UInt8] = []
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                received += buffer[0..<count]
            }
            return String(decoding: received, as: UTF8.self)
        }
        #expect(unixAnswer?.hasPrefix("HTTP/1.1 200 OK") == true)
        if hasIPv6 {
            let port = test.server.boundPorts[0]
            let ipv6Answer = await offload { () -> String? in
                let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
                defer { close(fd) }
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                address.sin6_port = port.bigEndian
                inet_pton(AF_INET6, "::1", &address.sin6_addr)
                let ok = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
                }
                guard ok == 0 else { return nil }
                let request = Array("GET /hello HTTP/1.1\r\nConnection: close\r\n\r\n".utf8)
                _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
            }
            #expect(ipv6Answer?.hasPrefix("HTTP/1.1 200 OK") == true)
        }
        await test.stop()
    }

    @Test func listenAddressesParseOrSayWhy() throws {
        #expect(try ListenAddress.parseList("127.0.0.1:8080, [::1]:9090,unix:/run/roost.sock")
            == [.inet(host: "127.0.0.1", port: 8080), .inet6(host: "::1", port: 9090), .unix(path: "/run/roost.sock")])
        #expect(try ListenAddress.parse("localhost:80") == .inet(host: "127.0.0.1", port: 80))
        for bad in ["8080", "example.org:80", "127.0.0.1:99999", "[::zz]:80", "unix:"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try ListenAddress.parse(bad) }
        }
    }

    /// Thousands of pipelined requests answered on the loop must not nest calls (a loop
    /// thread's stack is 1 MiB).
    @Test func manyPipelinedInlineRequestsAreAllAnswered() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        let count = 20_000
        let writer = Task.detached { client.send(String(repeating: "GET /inline HTTP/1.1\r\n\r\n", count: count)) }
        var answered = 0
        while answered < count, let response = await client.readResponse(), response.status == 200 { answered += 1 }
        await writer.value
        #expect(answered == count)
        await test.stop()
    }

    /// Random bytes on many connections: every one ends in an answer or a close, and the
    /// server goes on serving (the parser itself is fuzzed separately).
    @Test func garbageOnManyConnectionsNeverStopsTheServer() async throws {
        var limits = NetworkLimits()
        limits.headerTimeoutMilliseconds = 200
        let test = try TransportServer(limits: limits)
        var random = SystemRandomNumberGenerator()
        for round in 0..<80 {
            let client = try TestClient(port: test.port)
            var bytes = (0..<Int.random(in: 1...2000, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if round % 2 == 0 { bytes = Array("GET /hello HTTP/1.1\r\n".utf8) + bytes }
            client.send(bytes)
            #expect(await client.waitForClose(), "round \(round)")
        }
        let client = try TestClient(port: test.port)
        client.send("GET /hello HTTP/1.1\r\n\r\n")
        #expect(await client.readResponse()?.status == 200)
        await test.stop()
    }

    @Test func requestIDsAreEchoedOrGenerated() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        client.send("GET /hello HTTP/1.1\r\nX-Request-Id: abc-123\r\n\r\n")
        #expect(await client.readResponse()?.headers["x-request-id"] == "abc-123")
        client.send("GET /hello HTTP/1.1\r\nX-Request-Id: bad id with spaces\r\n\r\n")
        let first = await client.readResponse()?.headers["x-request-id"]
        client.send("GET /hello HTTP/1.1\r\n\r\n")
        let second = await client.readResponse()?.headers["x-request-id"]
        #expect(first != nil && second != nil && first != second)
        #expect(first?.contains(" ") == false)
        await test.stop()
    }

    @Test func shutdownAnswersRequestsInFlightThenStops() async throws {
        let test = try TransportServer()
        let client = try TestClient(port: test.port)
        client.send("GET /sleep/300 HTTP/1.1\r\n\r\n")
        #expect(try await Poll.until(every: .milliseconds(5)) { test.server.runningHandlers >= 1 })
        let idle = try TestClient(port: test.port)
        idle.send("GET /hello HTTP/1.1\r\n\r\n")
        #expect(await idle.readResponse()?.status == 200)
        await test.server.shutdown()
        let response = try #require(await client.readResponse())
        #expect(response.status == 200)
        #expect(response.headers["connection"] == "close")
        #expect(await idle.waitForClose())
        #expect(test.server.openConnections == 0)
        #expect(throws: TestClientError.self) { try TestClient(port: test.port) }
    }
}

/// A streamed body of `pieces` pieces of 4 KiB (piece i filled with i % 251), failing at
/// `failAt`; counts what it was asked for.
final class CountingSource: ResponseBodySource, Sendable {
    let pieces: Int
    let failAt: Int?
    private let count = Atomic<Int>(0)
    /// Pieces asked for so far (the end, nil, counts as one).
    var asked: Int { count.load(ordering: .relaxed) }

    init(pieces: Int, failAt: Int? = nil) {
        self.pieces = pieces
        self.failAt = failAt
    }

    static let pieceBytes = 4096

    static func expected(pieces: Int) -> [UInt8] {
        (0..<pieces).flatMap { Array(repeating: UInt8($0 % 251), count: pieceBytes) }
    }

    func next() async throws -> [UInt8]? {
        let index = count.add(1, ordering: .relaxed).oldValue
        if index == failAt { throw TestClientError("the source failed") }
        guard index < pieces else { return nil }
        return Array(repeating: UInt8(index % 251), count: Self.pieceBytes)
    }
}

/// A path under a secret prefix (a bridge's hook URL) is logged without its secret.
@Test func aSecretPathIsLoggedWithoutItsSecret() {
    var builder = Router.Builder()
    builder.secretPaths(under: "/v1/bridge/hooks/")
    let router = builder.build()
    #expect(router.loggable("/v1/bridge/hooks/rbh_abc/extra") == "/v1/bridge/hooks/[secret]")
    #expect(router.loggable("/v1/bridge/alerts") == "/v1/bridge/alerts")
}
