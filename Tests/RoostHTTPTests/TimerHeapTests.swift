import RoostTestSupport
import Testing
@testable import RoostHTTP

/// The event loop's deadlines on their own: order, cancelling, and what a cancelled timer keeps.
struct TimerHeapTests {
    final class Held {}

    @Test func dueActionsComeInDeadlineOrderAndCancelledOnesNever() {
        var heap = TimerHeap()
        var fired: [Int] = []
        var tokens: [Int: UInt64] = [:]
        for (label, deadline) in [(3, 30), (1, 10), (4, 40), (2, 20), (5, 50)] as [(Int, UInt64)] {
            tokens[label] = heap.schedule(at: deadline) { fired.append(label) }
        }
        heap.cancel(tokens[1]!)
        heap.cancel(tokens[4]!)
        #expect(heap.nextDeadline() == 20, "the cancelled earliest is skipped")
        for action in heap.takeDue(now: 35) { action() }
        #expect(fired == [2, 3])
        #expect(heap.nextDeadline() == 50)
        for action in heap.takeDue(now: 100) { action() }
        #expect(fired == [2, 3, 5])
        #expect(heap.isEmpty && heap.nextDeadline() == nil)
    }

    @Test func cancellingLetsGoOfTheActionAtOnce() {
        var heap = TimerHeap()
        weak var weakHeld: Held?
        var token: UInt64 = 0
        do {
            let held = Held()
            weakHeld = held
            token = heap.schedule(at: 60_000_000_000) { _ = held }
            _ = heap.schedule(at: 1) {}  // keeps the heap from emptying, which would clear it anyway
        }
        #expect(weakHeld != nil)
        heap.cancel(token)
        #expect(weakHeld == nil, "a cancelled deadline a minute away no longer holds what its action captured")
    }

    /// A deadline scheduled and cancelled per request, beside a few long-lived ones: the heap
    /// keeps no more than about twice its live timers, and still fires exactly the live ones in
    /// order (randomized, with a fixed seed).
    @Test func cancelledEntriesDoNotAccumulate() {
        var heap = TimerHeap()
        var generator = SeededGenerator(seed: 24)
        var live: [UInt64: UInt64] = [:]  // token: deadline
        var fired: [UInt64] = []
        for _ in 0..<10 {
            let deadline = 1_000 + generator.next() % 1_000
            var token: UInt64 = 0
            token = heap.schedule(at: deadline) { fired.append(token) }
            live[token] = deadline
        }
        var most = 0
        for _ in 0..<20_000 {
            let token = heap.schedule(at: 5_000 + generator.next() % 1_000) {}
            heap.cancel(token)
            most = max(most, heap.storedEntries)
        }
        #expect(most <= 2 * live.count + 65)
        let due = heap.takeDue(now: 10_000)
        for action in due { action() }
        #expect(fired.count == live.count && Set(fired) == Set(live.keys))
        #expect(zip(fired, fired.dropFirst()).allSatisfy { live[$0]! <= live[$1]! }, "in deadline order")
        #expect(heap.isEmpty)
    }
}
