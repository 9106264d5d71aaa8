import RoostProtocol
import Testing
@testable import RoostHTTP

/// A WebSocket's closing handshake and keep-alive alone (RFC 6455 §5.5, §7), with the bytes of
/// its control frames from the RFC.
struct WebSocketLivenessTests {
    let second: UInt64 = 1_000_000_000

    @Test func controlFramesAreTheRFCsBytes() {
        #expect(WebSocketLiveness.Control.ping.frame == [0x89, 0x00])
        #expect(WebSocketLiveness.Control.pong([0x61]).frame == [0x8A, 0x01, 0x61])
        #expect(WebSocketLiveness.Control.close(nil, reason: "").frame == [0x88, 0x00])
        #expect(WebSocketLiveness.Control.close(.goingAway, reason: "").frame == [0x88, 0x02, 0x03, 0xE9])
    }

    @Test func thePeersCloseIsEchoedThenTheConnectionEndsOnceItIsWritten() {
        var liveness = WebSocketLiveness(pongTimeout: 10 * second)
        #expect(liveness.receivedClose(.normal) == [.send(.close(.normal, reason: "")), .closeWhenWritten])
        #expect(liveness.closeReceived == .normal && !liveness.sendsData)
        var empty = WebSocketLiveness(pongTimeout: 10 * second)
        #expect(empty.receivedClose(nil) == [.send(.close(nil, reason: "")), .closeWhenWritten], "no code: an empty close back")
    }

    @Test func ourCloseWaitsBoundedForThePeersWhichEndsIt() {
        var liveness = WebSocketLiveness(pongTimeout: 10 * second)
        #expect(liveness.startClosing(.goingAway, reason: "server shutting down")
            == [.send(.close(.goingAway, reason: "server shutting down")), .awaitPeerClose])
        #expect(liveness.startClosing(.normal, reason: "again").isEmpty, "one close frame only")
        #expect(liveness.receivedPing([1]).isEmpty, "nothing but the close follows ours")
        #expect(liveness.receivedClose(.goingAway) == [.closeNow], "the handshake is complete")
    }

    @Test func aProtocolErrorSendsItsCodeOnceAndEnds() {
        var liveness = WebSocketLiveness(pongTimeout: 10 * second)
        #expect(liveness.failed(.protocolError, reason: "masked") == [.send(.close(.protocolError, reason: "masked")), .closeWhenWritten])
        #expect(liveness.failed(.messageTooBig, reason: "big") == [.closeWhenWritten])
    }

    @Test func pingsGoOutWhenTheLastWasAnsweredAndAnUnansweredOneTimesOut() {
        var liveness = WebSocketLiveness(pongTimeout: 10 * second)
        #expect(liveness.receivedPing([7]) == [.send(.pong([7]))])
        #expect(liveness.pingTick(at: 30 * second) == [.send(.ping), .scheduleNextPing])
        #expect(liveness.pingTick(at: 39 * second) == [.scheduleNextPing], "waiting, not yet timed out: no second ping")
        liveness.receivedPong(at: 39 * second)
        #expect(liveness.pingTick(at: 60 * second) == [.send(.ping), .scheduleNextPing])
        #expect(liveness.pingTick(at: 70 * second - 1) == [.scheduleNextPing])
        #expect(liveness.pingTick(at: 70 * second) == [.send(.close(.goingAway, reason: "pong timeout")), .closeNow])
        #expect(liveness.pingTick(at: 90 * second).isEmpty, "closing: no more pings")
    }

    @Test func aClientThatFellBehindGets1013AndIsGone() {
        var liveness = WebSocketLiveness(pongTimeout: 10 * second)
        #expect(liveness.fellBehind() == [.send(.close(.tryAgainLater, reason: "client fell behind")), .closeNow])
        #expect(!liveness.sendsData)
    }
}
