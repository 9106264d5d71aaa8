import Testing
@testable import RoostHTTP

/// The connection's lifecycle alone: what it still reads and when it ends, event by event.
struct ConnectionLifecycleTests {
    typealias Lifecycle = ConnectionLifecycle

    static let states: [Lifecycle] = [.open, .lastBody, .upgrading, .draining]
    static let events: [Lifecycle.Event] = [.peerFinished, .malformed, .lastRequest(streamingBody: false), .lastRequest(streamingBody: true),
                                            .bodyEnded, .finalResponse, .upgradeTaken, .switchedProtocols, .closing]

    @Test func aKeptAliveConnectionReadsOnAndItsLastRequestEndsIt() {
        #expect(Lifecycle.open.readsInput && !Lifecycle.open.closesWhenDrained)
        let last = Lifecycle.open.after(.lastRequest(streamingBody: false))
        #expect(last == .draining && !last.readsInput && last.closesWhenDrained)
    }

    @Test func aLastRequestsStreamedBodyIsReadToItsEndAndNothingAfterIt() {
        let streaming = Lifecycle.open.after(.lastRequest(streamingBody: true))
        #expect(streaming == .lastBody && streaming.readsInput && streaming.closesWhenDrained)
        #expect(streaming.after(.bodyEnded) == .draining)
        #expect(Lifecycle.open.after(.bodyEnded) == .open, "a kept-alive body's end changes nothing")
    }

    @Test func anUpgradeStopsRequestsHoldsTheConnectionAndReadsFramesOnceSwitched() {
        let upgrading = Lifecycle.open.after(.upgradeTaken)
        #expect(upgrading == .upgrading && !upgrading.readsInput && !upgrading.closesWhenDrained)
        #expect(upgrading.after(.switchedProtocols) == .open)
        #expect(upgrading.after(.finalResponse) == .draining, "a refused upgrade ends the connection")
        #expect(Lifecycle.open.after(.switchedProtocols).after(.closing) == .draining)
    }

    @Test func whatEndsAConnectionEndsItFromAnyState() {
        for state in Self.states {
            for event in [Lifecycle.Event.peerFinished, .malformed, .finalResponse, .closing] {
                #expect(state.after(event) == .draining, "\(state) after \(event)")
            }
            #expect(Lifecycle.draining.after(.lastRequest(streamingBody: true)) == .draining)
            #expect(Lifecycle.draining.after(.upgradeTaken) == .draining)
        }
    }

    /// The two flags the lifecycle replaced, set as the connection used to set them: each event
    /// moves the lifecycle exactly as it moved the flags (apart from the switch, which now also
    /// says the input is read: a WebSocket's frames always were).
    @Test func everyEventMovesTheStateAsTheTwoFlagsItReplacedMoved() {
        func flags(_ state: Lifecycle) -> (stop: Bool, close: Bool) { (!state.readsInput, state.closesWhenDrained) }
        func old(_ flags: (stop: Bool, close: Bool), _ event: Lifecycle.Event) -> (stop: Bool, close: Bool) {
            var (stop, close) = flags
            switch event {
            case .peerFinished, .malformed, .finalResponse, .closing: (stop, close) = (true, true)
            case .lastRequest(let streamingBody):
                if !streamingBody { stop = true }
                close = true
            case .bodyEnded: if close { stop = true }
            case .upgradeTaken: stop = true
            case .switchedProtocols: (stop, close) = (false, false)
            }
            return (stop, close)
        }
        for state in Self.states {
            for event in Self.events {
                let expected = old(flags(state), event)
                let moved = flags(state.after(event))
                #expect(moved == expected, "\(state) after \(event): \(moved), the flags had \(expected)")
            }
        }
    }
}
