import Foundation
import Synchronization
import Testing
@testable import RoostHTTP

/// The event loop's ordered work on a real loop thread: a long piece of it yields between turns
/// to what else was handed to the loop, and keeps its place ahead of later ordered work.
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
}
