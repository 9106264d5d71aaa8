@testable import RoostServer
import RoostTestSupport
import Testing

/// The bell a committed alert rings so the delivery engine looks at once: a waiter hears a ring
/// that comes while it waits, and one that came before it began is not mistaken for a new one.
struct DeliveryBellTests {
    @Test func aWaiterHearsTheRingThatComesWhileItWaits() async throws {
        let bell = DeliveryBell()
        bell.ring()  // before anyone waits: not heard as new
        #expect(await bell.wait(upTo: .milliseconds(1)) == false)
        async let heard = bell.wait(upTo: .seconds(120))
        // Rung once the waiter is parked, so the ring is surely one it must hear.
        #expect(try await Poll.until { bell.waiting == 1 })
        bell.ring()
        #expect(await heard)
        #expect(bell.waiting == 0)
    }

    /// A worker stopping cancels its wait: it ends then, not at its timeout.
    @Test func aCancelledWaitEndsAtOnceUnrung() async throws {
        let bell = DeliveryBell()
        // Cancelled at once (perhaps before it parks), and once parked.
        let early = Task { await bell.wait(upTo: .seconds(600)) }
        early.cancel()
        #expect(await early.value == false)
        let waiting = Task { await bell.wait(upTo: .seconds(600)) }
        #expect(try await Poll.until { bell.waiting == 1 })
        waiting.cancel()
        #expect(await waiting.value == false)
        #expect(bell.waiting == 0, "the cancelled waiter is let go")
    }
}
