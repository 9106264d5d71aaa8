import Foundation
import Synchronization
import Testing
@testable import RoostHTTP

/// The event loop's ordered work on a real loop thread: a long piece of it yields between turns
/// to what else was handed to the loop, and keeps its place ahead of later ordered work.
struct EventLoopTests {
    @Test func orderedWorkYieldsToOtherHandOversBetweenTurnsAndKeepsItsOrder() async throws {
        let loop = try EventLoop(index: 0, orderedBudget: 4)
        let thread = Thread { loop.run() }
        thread.start()
        let log = Mutex<[String]>([])
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
            // Handed over from the loop itself, so all three wait in the same inbox, in this order.
            loop.execute {
                let written = Mutex(0)
                loop.executeInOrder { budget in  // ten writes, four a turn
                    while budget > 0 && written.withLock({ $0 }) < 10 {
                        let index = written.withLock { count in defer { count += 1 }; return count }
                        log.withLock { $0.append("write \(index)") }
                        budget -= 1
                    }
                    return written.withLock { $0 } == 10
                }
                loop.execute { log.withLock { $0.append("other") } }
                loop.executeInOrder { budget in
                    log.withLock { $0.append("after") }
                    budget -= 1
                    finished.resume()
                    return true
                }
            }
        }
        loop.stop()
        let expected = (0..<4).map { "write \($0)" } + ["other"] + (4..<10).map { "write \($0)" } + ["after"]
        #expect(log.withLock { $0 } == expected)
    }

    @Test func aStepThatIsNotDoneEndsItsTurnEvenWithBudgetLeft() async throws {
        let loop = try EventLoop(index: 0, orderedBudget: 100)
        let thread = Thread { loop.run() }
        thread.start()
        let log = Mutex<[String]>([])
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
            loop.execute {
                let calls = Mutex(0)
                loop.executeInOrder { _ in  // spends nothing, done on its third call
                    let call = calls.withLock { count in defer { count += 1 }; return count }
                    log.withLock { $0.append("call \(call)") }
                    if call == 2 { finished.resume() }
                    return call == 2
                }
                loop.execute { log.withLock { $0.append("other") } }
            }
        }
        loop.stop()
        #expect(log.withLock { $0 } == ["call 0", "other", "call 1", "call 2"])
    }
}
