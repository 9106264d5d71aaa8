import Foundation
import Synchronization
import Testing
@testable import RoostHTTP

/// The event loop's ordered work on a real loop thread: a long piece of it yields between turns
/// to what else was handed to the loop, and keeps its place ahead of later ordered work. And its
/// ticks: each reaches the registration it was asked for, never a later one of the same descriptor.
struct EventLoopTests {
    /// What the loop did, in its order.
    final class Log: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// Runs a loop with `budget` on a thread of its own, hands it `handOver` from the loop itself
    /// (so that all it hands over waits in the same inbox, in its order), and returns the log once
    /// the work has called `finished`.
    func logOfLoop(budget: Int, _ handOver: @escaping @Sendable (EventLoop, Log, @escaping @Sendable () -> Void) -> Void) async throws -> [String] {
        let loop = try EventLoop(index: 0, orderedBudget: budget)
        Thread { loop.run() }.start()
        let log = Log()
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
            loop.execute { handOver(loop, log) { finished.resume() } }
        }
        loop.stop()
        return log.all
    }

    @Test func orderedWorkYieldsToOtherHandOversBetweenTurnsAndKeepsItsOrder() async throws {
        let log = try await logOfLoop(budget: 4) { loop, log, finished in
            let written = Mutex(0)
            loop.executeInOrder { budget in  // ten writes, four a turn
                while budget > 0 && written.withLock({ $0 }) < 10 {
                    let index = written.withLock { count in defer { count += 1 }; return count }
                    log.append("write \(index)")
                    budget -= 1
                }
                return written.withLock { $0 } == 10
            }
            loop.execute { log.append("other") }
            loop.executeInOrder(spending: 1) {
                log.append("after")
                finished()
            }
        }
        #expect(log == (0..<4).map { "write \($0)" } + ["other"] + (4..<10).map { "write \($0)" } + ["after"])
    }

    @Test func aStepThatIsNotDoneEndsItsTurnEvenWithBudgetLeft() async throws {
        let log = try await logOfLoop(budget: 100) { loop, log, finished in
            let calls = Mutex(0)
            loop.executeInOrder { _ in  // spends nothing, done on its third call
                let call = calls.withLock { count in defer { count += 1 }; return count }
                log.append("call \(call)")
                if call == 2 { finished() }
                return call == 2
            }
            loop.execute { log.append("other") }
        }
        #expect(log == ["call 0", "other", "call 1", "call 2"])
    }

    /// A handler that logs its ticks under its name.
    final class Ticking: EventHandler, @unchecked Sendable {
        let name: String
        let log: Log
        let onTick: @Sendable () -> Void
        init(_ name: String, _ log: Log, onTick: @escaping @Sendable () -> Void = {}) {
            self.name = name
            self.log = log
            self.onTick = onTick
        }
        func handleEvent(readable: Bool, writable: Bool) {}
        func tick() {
            log.append(name)
            onTick()
        }
    }

    @Test func aTickReachesItsRegistrationAndNotALaterOneOfTheSameDescriptor() async throws {
        let clock = ManualClock()
        let loop = try EventLoop(index: 0, clock: clock)
        Thread { loop.run() }.start()
        defer { loop.stop() }
        let log = Log()
        var pipes: [Int32] = [0, 0, 0, 0]
        #expect(pipe(&pipes[0]) == 0 && pipe(&pipes[2]) == 0)
        let (reused, other) = (pipes[0], pipes[2])
        defer { for fd in pipes { close(fd) } }
        let (ticksSeen, seen) = AsyncStream.makeStream(of: Void.self)
        let asked = Mutex(false)
        await withCheckedContinuation { (scheduled: CheckedContinuation<Void, Never>) in
            loop.execute {
                // "old" asks for a tick and then lets go of its descriptor, which "new" registers.
                let old = try! loop.register(reused, Ticking("old", log))
                loop.scheduleTick(reused, generation: old, afterNanoseconds: 100_000_000)
                loop.deregister(reused)
                let new = try! loop.register(reused, Ticking("new", log) { if asked.withLock({ $0 }) { seen.yield() } })
                let first = try! loop.register(other, Ticking("other", log) { seen.yield() })
                loop.scheduleTick(other, generation: first, afterNanoseconds: 100_000_000)
                loop.scheduleTick(reused, generation: new, afterNanoseconds: 200_000_000)
                scheduled.resume()
            }
        }
        var ticked = ticksSeen.makeAsyncIterator()
        clock.advance(milliseconds: 99)
        clock.advance(milliseconds: 1)
        await ticked.next()
        #expect(log.all == ["other"], "old's tick, due first, went to nobody")
        asked.withLock { $0 = true }
        clock.advance(milliseconds: 100)
        await ticked.next()
        #expect(log.all == ["other", "new"])
    }
}
