import Foundation
import RoostProtocol
@testable import RoostHTTP
import RoostTestSupport
import Testing

extension TransportServer {
    static func withEcho(_ limits: NetworkLimits = NetworkLimits(), threads: Int = 2, clock: any LoopClock = SystemClock()) throws -> TransportServer {
        try TransportServer(limits: limits, threads: threads, clock: clock, extraRoutes: { builder in
            builder.addWebSocket("/v1/conformance/echo") { _ in EchoSession() }
            builder.addWebSocket("/v1/refusing") { _ in
                throw APIError(.unauthorized, code: .unauthenticated, message: "no token")
            }
        })
    }
}

@Suite(.serialized)
struct WebSocketServerTests {
    @Test func anUpgradedConnectionEchoesAndAnswersPings() async throws {
        let test = try TransportServer.withEcho()
        let ws = try await WebSocketTestClient.connect(port: test.port)
        ws.sendText("Suspicious van on Elm St 🚐")
        #expect(await ws.receive() == .text("Suspicious van on Elm St 🚐"))
        ws.send(.ping, Array("are you there".utf8))
        #expect(await ws.receive() == .pong(Array("are you there".utf8)))
        // A fragmented message with a ping in between.
        ws.send(.text, Array("frag".utf8), fin: false)
        ws.send(.ping, [])
        ws.send(.continuation, Array("ment".utf8))
        #expect(await ws.receive() == .pong([]))
        #expect(await ws.receive() == .text("fragment"))
        await test.stop()
    }

    @Test func theClientsCloseIsEchoedAndTheSocketClosed() async throws {
        let test = try TransportServer.withEcho()
        let ws = try await WebSocketTestClient.connect(port: test.port)
        ws.send(.close, [0x03, 0xE8] + Array("bye".utf8))
        #expect(await ws.receiveClose() == .some(.normal))
        #expect(await ws.client.waitForClose())
        let text = test.server.renderMetrics(pool: (open: 0, inUse: 0, waiting: 0))
        #expect(text.contains(#"roost_websocket_closes_total{code="1000"} 1"#))
        #expect(text.contains(#"roost_websocket_frames_total{direction="in"} 1"#))
        await test.stop()
    }

    @Test func theServersCloseOnShutdownIs1001AndWaitsForTheAnswer() async throws {
        let test = try TransportServer.withEcho()
        let ws = try await WebSocketTestClient.connect(port: test.port)
        ws.sendText("hello")
        #expect(await ws.receive() == .text("hello"))
        let shutdown = Task { await test.server.shutdown() }
        #expect(await ws.receiveClose() == .some(.goingAway))
        ws.send(.close, [0x03, 0xE9])
        #expect(await ws.client.waitForClose())
        await shutdown.value
        #expect(test.server.openConnections == 0)
    }

    @Test(arguments: [
        ("unmasked frame", [0x81, 0x02, 0x68, 0x69] as [UInt8], WebSocketCloseCode.protocolError),
        ("reserved opcode", [0x83, 0x80, 0, 0, 0, 0], .protocolError),
        ("invalid UTF-8", [0x81, 0x82, 0, 0, 0, 0, 0xC0, 0xAF], .invalidPayload),
        ("oversized message", [0x82, 0xFF, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0], .messageTooBig),
    ])
    func badFramesCloseWithTheRightCode(name: String, bytes: [UInt8], code: WebSocketCloseCode) async throws {
        let test = try TransportServer.withEcho()
        let ws = try await WebSocketTestClient.connect(port: test.port)
        ws.client.send(bytes)
        #expect(await ws.receiveClose() == .some(code), "\(name)")
        #expect(await ws.client.waitForClose(), "\(name)")
        await test.stop()
    }

    @Test func aRefusedUpgradeGetsTheAcceptorsError() async throws {
        let test = try TransportServer.withEcho()
        await #expect(throws: TestClientError.self) { try await WebSocketTestClient.connect(port: test.port, path: "/v1/refusing") }
        let client = try TestClient(port: test.port)
        client.send("GET /v1/conformance/echo HTTP/1.1\r\n\r\n")
        #expect(await client.readResponse()?.status == 426)
        await test.stop()
    }

    @Test func theServerPingsAndClosesWhenNoPongComes() async throws {
        var limits = NetworkLimits()
        limits.pingIntervalMilliseconds = 150
        limits.pongTimeoutMilliseconds = 300
        let clock = ManualClock()
        let test = try TransportServer.withEcho(limits, threads: 1, clock: clock)
        let ws = try await WebSocketTestClient.connect(port: test.port)
        // Time moves tick by tick (each tick schedules the next from when it ran).
        await test.settle()
        clock.advance(milliseconds: 150)
        #expect(await ws.receive() == .ping([]))
        clock.advance(milliseconds: 150)
        await test.settle()
        clock.advance(milliseconds: 149)
        await test.settle()
        #expect(test.server.openConnections == 1, "open just before the pong timeout")
        // No pong, 300 ms after the ping: the server gives up with 1001.
        clock.advance(milliseconds: 1)
        #expect(await ws.receiveClose() == .some(.goingAway))
        await test.stop()
    }

    @Test func aClientThatStopsReadingIsClosedWith1013AndOthersAreUnaffected() async throws {
        var limits = NetworkLimits()
        limits.maxOutboundQueueBytes = 256 * 1024
        // One event loop: the healthy client shares it with the stalled one.
        let test = try TransportServer(limits: limits, threads: 1, extraRoutes: { builder in
            builder.addWebSocket("/v1/conformance/echo") { _ in EchoSession() }
        })
        let stalled = try await WebSocketTestClient.connect(port: test.port, receiveBuffer: 4096)
        let healthy = try await WebSocketTestClient.connect(port: test.port)
        #expect(test.server.openConnections == 2)
        // 60 KiB messages, never read back: the echoes pile up in the server's queue.
        let payload = [UInt8](repeating: 0x61, count: 60 * 1024)
        let flood = Task.detached {
            for _ in 0..<200 { stalled.send(.binary, payload) }
        }
        // The stalled client is dropped while the healthy one keeps getting every echo, in
        // order. (How fast it gets them is a benchmark's business, not a test's.)
        var round = 0
        while test.server.openConnections > 1 {
            round += 1
            healthy.sendText("ping \(round)")
            #expect(await healthy.receive() == .text("ping \(round)"))
        }
        await flood.value
        #expect(test.server.openConnections == 1)
        healthy.sendText("after")
        #expect(await healthy.receive() == .text("after"))
        // The dropped client's queue is freed: nothing is left waiting to be written.
        let metrics = test.server.renderMetrics(pool: (open: 0, inUse: 0, waiting: 0))
        #expect(metrics.contains("roost_outbound_queued_bytes 0\n"), "\(metrics)")
        #expect(metrics.contains(#"roost_websocket_closes_total{code="1013"} 1"#))
        await test.stop()
    }

    /// Hands each opened channel to the test.
    final class ChannelCollector: WebSocketSession {
        let opened: AsyncStream<WebSocketChannel>.Continuation
        init(_ opened: AsyncStream<WebSocketChannel>.Continuation) { self.opened = opened }
        var acceptsBinary: Bool { false }
        func opened(_ channel: WebSocketChannel) { opened.yield(channel) }
        func received(_ message: WebSocketMessage, on channel: WebSocketChannel) {}
        func closed(code: WebSocketCloseCode?) {}
    }

    @Test func aFrameToManyIsWrittenOverSeveralTurnsAndWhatIsSentAfterItStaysBehindIt() async throws {
        var limits = NetworkLimits()
        limits.framesPerLoopTurn = 2
        // No ping may come first on a busy machine: `receive()` returns pings too.
        limits.pingIntervalMilliseconds = 600_000
        let (opened, continuation) = AsyncStream.makeStream(of: WebSocketChannel.self)
        let test = try TransportServer(limits: limits, threads: 1, extraRoutes: { builder in
            builder.addWebSocket("/v1/collect") { _ in ChannelCollector(continuation) }
        })
        var clients: [WebSocketTestClient] = []
        var channels: [WebSocketChannel] = []
        var iterator = opened.makeAsyncIterator()
        for _ in 0..<7 {
            clients.append(try await WebSocketTestClient.connect(port: test.port, path: "/v1/collect"))
            channels.append(await iterator.next()!)
        }
        // Seven frames at two a turn: four turns, with the sends below handed over meanwhile.
        WebSocketChannel.send(frame: WebSocketFrameEncoder.text("alert"), to: channels)
        channels[6].send(frame: WebSocketFrameEncoder.text("after"))
        WebSocketChannel.send(frame: WebSocketFrameEncoder.text("next"), to: Array(channels[4...]))
        channels[5].close(.normal)
        for (index, client) in clients.enumerated() {
            #expect(await client.receive() == .text("alert"), "client \(index)")
        }
        #expect(await clients[6].receive() == .text("after"))
        #expect(await clients[4].receive() == .text("next"))
        #expect(await clients[5].receive() == .text("next"))
        #expect(await clients[5].receiveClose() == .some(.normal))
        #expect(await clients[6].receive() == .text("next"))
        await test.stop()
    }
}
