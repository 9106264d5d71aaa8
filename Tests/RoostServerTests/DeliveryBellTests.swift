@testable import RoostServer
import Testing

/// The bell a committed alert rings so the delivery engine looks at once: a waiter hears a ring
/// that comes while it waits, and one that came before it began is not mistaken for a new one.
struct DeliveryBellTests {
    @Test func aWaiterHearsTheRingThatComesWhileItWaits() async {
        let bell = DeliveryBell()
        bell.ring()  // before anyone waits: not heard as new
        #expect(await bell.wait(upTo: .milliseconds(1)) == false)
        async let heard = bell.wait(upTo: .seconds(120))
        // Rung until the waiter has surely begun: each ring is one more, so the first after its start counts.
        let ringer = Task {
            while !Task.isCancelled {
                bell.ring()
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
        #expect(await heard)
        ringer.cancel()
    }

    /// A worker stopping cancels its wait: it ends then, not at its timeout.
    @Test func aCancelledWaitEndsAtOnceUnrung() async {
        let bell = DeliveryBell()
        let waiting = Task { await bell.wait(upTo: .seconds(600)) }
        waiting.cancel()
        #expect(await waiting.value == false)
    }
}
