import Testing
@testable import RoostHTTP

/// The connection's decisions alone, with no socket and no loop: the order responses leave
/// in, and which deadline runs.
struct ResponseQueueTests {
    @Test func responsesLeaveInRequestOrderWhateverOrderTheyFinishIn() {
        var queue = ResponseQueue()
        let numbers = (0..<4).map { _ in queue.take() }
        #expect(numbers == [0, 1, 2, 3] && queue.inFlight == 4)
        #expect(queue.finish(2, [2]).isEmpty && queue.finish(1, [1]).isEmpty, "nothing leaves before the first")
        #expect(queue.hasWaiting)
        #expect(queue.finish(0, [0]) == [.write([0]), .write([1]), .write([2])])
        #expect(queue.inFlight == 1 && !queue.hasWaiting)
        #expect(queue.finish(3, [3]) == [.write([3])])
        #expect(queue.inFlight == 0)
    }

    @Test func anUpgradeSwitchesProtocolsRightAfterItsResponseAndHoldsWhatFollows() {
        var queue = ResponseQueue()
        let (first, upgrade, after) = (queue.take(), queue.take(), queue.take())
        queue.upgrade(at: upgrade)
        #expect(queue.finish(after, [9]).isEmpty)
        #expect(queue.finish(upgrade, [101]).isEmpty)
        #expect(queue.finish(first, [200]) == [.write([200]), .write([101]), .switchProtocols])
        #expect(queue.hasWaiting, "a response after the upgrade is never written as HTTP")
    }
}

struct ConnectionDeadlineTests {
    typealias Deadline = ConnectionDeadline

    func decide(_ current: Deadline?, output: Bool = false, owed: Bool = false, midRequest: Bool = false, progress: Bool = false) -> Deadline.Decision {
        Deadline.decide(current: current, outputPending: output, responsesOwed: owed, midRequest: midRequest, progress: progress)
    }

    @Test func anIdleConnectionRunsTheIdleDeadlineAndAnyActivityRestartsIt() {
        #expect(decide(nil) == .start(.idle))
        #expect(decide(.idle) == .start(.idle))
    }

    @Test func aRequestsHeaderDeadlineRunsFromItsFirstByteAndMoreBytesBuyNoTime() {
        #expect(decide(.idle, midRequest: true) == .start(.header))
        #expect(decide(.header, midRequest: true) == .keep)
    }

    @Test func whileTheServerOwesAResponseNoClientDeadlineRuns() {
        #expect(decide(.header, owed: true) == Deadline.Decision.none)
        #expect(decide(.idle, owed: true, midRequest: true) == Deadline.Decision.none)
    }

    @Test func unreadOutputRunsTheWriteDeadlineWhichOnlyProgressRestarts() {
        #expect(decide(nil, output: true, owed: true) == .start(.write))
        #expect(decide(.write, output: true, owed: true) == .keep, "more requests buy no time")
        #expect(decide(.write, output: true, midRequest: true) == .keep)
        #expect(decide(.write, output: true, progress: true) == .start(.write))
        #expect(decide(.header, output: true, midRequest: true) == .start(.write))
    }

    @Test func theHeaderDeadlineIsTheHeaderTimeoutAndTheOthersTheIdleTimeout() {
        var limits = NetworkLimits()
        limits.headerTimeoutMilliseconds = 1_234
        limits.idleTimeoutMilliseconds = 5_678
        #expect(Deadline.header.milliseconds(limits) == 1_234)
        #expect(Deadline.idle.milliseconds(limits) == 5_678 && Deadline.write.milliseconds(limits) == 5_678)
    }
}
