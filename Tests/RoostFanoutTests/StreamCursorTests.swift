import Foundation
import RoostFanout
import RoostTestSupport
import Testing

/// The stream cursor with no database and no socket: exactly once, in order, and nothing of a
/// group the user is not in, whatever order live events, replay pages, removals and joins come in.
struct StreamCursorTests {
    let oak = UUID()
    let elm = UUID()

    @Test func liveEventsWaitForGoLiveThenGoOutOnceInOrder() {
        var cursor = StreamCursor<Int64>(standing: [(oak, 3)])
        #expect(cursor.live(oak, seq: 3, frame: 3) == nil)  // covered by ready
        #expect(cursor.live(oak, seq: 4, frame: 4) == nil)  // waits: not live yet
        #expect(cursor.live(oak, seq: 5, frame: 5) == nil)
        #expect(cursor.goLive() == [4, 5])
        #expect(cursor.live(oak, seq: 5, frame: 5) == nil)  // a repeat
        #expect(cursor.live(oak, seq: 6, frame: 6) == 6)
        #expect(cursor.live(elm, seq: 1, frame: 1) == nil)  // not a group of the user's
    }

    @Test func aReplayHoldsLiveEventsAndReleasesThoseNewerThanItsLastPage() {
        var cursor = StreamCursor<Int64>(standing: [(oak, 10)])
        let begun = cursor.beginReplay([(group: oak, after: 2), (group: elm, after: 0)])
        #expect(begun.unknown == [elm] && begun.accepted.map(\.0) == [oak])
        #expect(cursor.live(oak, seq: 11, frame: 11) == nil)  // held
        #expect(cursor.replayPosition(oak, token: begun.token) == 2)
        #expect(cursor.replayed(oak, token: begun.token, page: (3...6).map { ($0, $0) }, complete: false) == [3, 4, 5, 6])
        #expect(cursor.replayPosition(oak, token: begun.token) == 6)
        #expect(cursor.replayed(oak, token: begun.token, page: (7...11).map { ($0, $0) }, complete: true) == [7, 8, 9, 10, 11])
        #expect(cursor.replayPosition(oak, token: begun.token) == nil)
        #expect(cursor.live(oak, seq: 12, frame: 12) == 12)
        #expect(cursor.standing(of: [oak, elm]).map(\.1) == [12])
    }

    @Test func aRemovalEndsAReplayInFlightAndDropsItsPages() {
        var cursor = StreamCursor<Int64>(standing: [(oak, 500)])
        let begun = cursor.beginReplay([(group: oak, after: 0)])
        #expect(cursor.replayed(oak, token: begun.token, page: (1...200).map { ($0, $0) }, complete: false).count == 200)
        let wasFollowed = cursor.removed(oak)
        #expect(wasFollowed)
        // A page read before the removal was known arrives afterwards: nothing of it goes out.
        #expect(cursor.replayed(oak, token: begun.token, page: (201...400).map { ($0, $0) }, complete: false).isEmpty)
        #expect(cursor.replayPosition(oak, token: begun.token) == nil)
        #expect(cursor.live(oak, seq: 501, frame: 501) == nil)
        // A resume naming the group now is told it is not the user's.
        #expect(cursor.beginReplay([(group: oak, after: 0)]).unknown == [oak])
    }

    @Test func aStaleNotAMemberReadDoesNotUndoARejoinTheHubHasSeen() {
        var cursor = StreamCursor<Int64>(standing: [(oak, 5)])
        let begun = cursor.beginReplay([(group: oak, after: 0)])
        cursor.removed(oak)  // the hub: member.removed at 6
        cursor.joined(oak, at: 8)  // the hub: member.joined at 8
        #expect(cursor.live(oak, seq: 8, frame: 8) == 8)
        cursor.replayFoundGone(oak, token: begun.token)  // a read made between 6 and 8
        #expect(cursor.follows(oak))
        #expect(cursor.live(oak, seq: 9, frame: 9) == 9)
    }

    /// What the property test's connection is sent: which group, which seq.
    struct Frame: Equatable {
        let group: UUID
        let seq: Int64
    }

    /// One group's log as the database has it, and how far the node's hub has delivered it.
    struct Log {
        enum Entry: Equatable { case post, removeMe, joinMe }
        var entries: [Entry] = []
        var delivered = 0
        /// The user's membership now (the database's truth) and as the hub last delivered it.
        var member = true
        var hubMember = true
        var replays: [Int] = []

        /// Whether the user was out of the group when event `seq` happened and has not re-joined
        /// since: the one thing a connection must never see.
        func forbidden(_ seq: Int) -> Bool {
            var inGroup = true
            var outAt: Int?
            for (index, entry) in entries.enumerated() {
                let at = index + 1
                if entry == .removeMe { inGroup = false; outAt = at }
                if entry == .joinMe { inGroup = true; outAt = nil }
                if at == seq { return !inGroup && outAt != nil && outAt! < seq }
            }
            return false
        }
    }

    @Test(arguments: 0..<400) func randomInterleavingsDeliverEveryEventOnceInOrderAndNothingWhileOut(seed: Int) throws {
        var random = SeededGenerator(seed: UInt64(seed) &* 7919 &+ 1)
        let groups = [oak, elm]
        var logs: [UUID: Log] = [oak: Log(entries: [.post, .post]), elm: Log()]
        var cursor = StreamCursor<Frame>(standing: [(oak, 2), (elm, 0)])
        logs[oak]!.delivered = 2
        // The client: the last seq it holds of each group it follows.
        var client: [UUID: Int64] = [oak: 2, elm: 0]
        var failures: [String] = []
        let pageSize = 3

        func received(_ frames: [Frame]) {
            for frame in frames {
                let (group, seq) = (frame.group, frame.seq)
                if logs[group]!.forbidden(Int(seq)) && !logs[group]!.member {
                    failures.append("seed \(seed): \(seq) of a group the user is out of reached the connection")
                }
                guard let last = client[group] else {
                    // Not followed by the client: only the user's own join may start it again.
                    if logs[group]!.entries[Int(seq) - 1] == .joinMe { client[group] = seq } else {
                        failures.append("seed \(seed): \(seq) arrived for a group the client was told it left")
                    }
                    continue
                }
                if seq <= last { continue }  // a repeat after a re-resume: the client drops it
                if seq != last + 1 && logs[group]!.entries[Int(seq) - 1] != .joinMe {
                    failures.append("seed \(seed): gap \(last) → \(seq)")
                }
                client[group] = seq
            }
        }

        /// The hub delivers the next event of `group` (in seq order, as FanoutHub does).
        func hubStep(_ group: UUID) {
            guard logs[group]!.delivered < logs[group]!.entries.count else { return }
            logs[group]!.delivered += 1
            let seq = Int64(logs[group]!.delivered)
            switch logs[group]!.entries[Int(seq) - 1] {
            case .removeMe:
                logs[group]!.hubMember = false
                // As FanoutState: a removal the connection has already read past (a replay of a
                // log where it re-joined since) is old news; any other is told.
                if !cursor.hasAccounted(group, through: seq) {
                    cursor.removed(group, at: seq)
                    client[group] = nil  // the group.removed notice
                }
            case .joinMe:
                logs[group]!.hubMember = true
                cursor.joined(group, at: seq)
                if let frame = cursor.live(group, seq: seq, frame: Frame(group: group, seq: seq)) { received([frame]) }
            case .post:
                guard logs[group]!.hubMember else { return }
                if let frame = cursor.live(group, seq: seq, frame: Frame(group: group, seq: seq)) { received([frame]) }
            }
        }

        /// One page of a replay, read from the database's log as it is now.
        func replayStep(_ group: UUID) {
            guard let token = logs[group]!.replays.last else { return }
            guard let after = cursor.replayPosition(group, token: token) else {
                logs[group]!.replays.removeLast()
                return
            }
            guard logs[group]!.member else {
                cursor.replayFoundGone(group, token: token)
                return
            }
            let available = logs[group]!.entries.count
            let end = min(available, Int(after) + pageSize)
            let page = Int(after) < end ? (Int(after) + 1...end).map { (seq: Int64($0), frame: Frame(group: group, seq: Int64($0))) } : []
            received(cursor.replayed(group, token: token, page: page, complete: page.count < pageSize))
        }

        for _ in 0..<120 {
            let group = groups[Int(random.next() % 2)]
            switch random.next() % 10 {
            case 0, 1, 2:
                if logs[group]!.member { logs[group]!.entries.append(.post) }
            case 3:
                if logs[group]!.member && random.next() % 3 == 0 { logs[group]!.entries.append(.removeMe); logs[group]!.member = false }
                else if !logs[group]!.member { logs[group]!.entries.append(.joinMe); logs[group]!.member = true }
            case 4, 5:
                hubStep(group)
            case 6:
                let cursors = client.map { (group: $0.key, after: $0.value) }.sorted { $0.group.uuidString < $1.group.uuidString }
                let begun = cursor.beginReplay(cursors)
                received(begun.frames)
                for (accepted, _) in begun.accepted { logs[accepted]!.replays.append(begun.token) }
            case 7, 8:
                replayStep(group)
            default:
                received(cursor.goLive())
            }
        }
        // Quiescence: the hub catches up, every replay finishes, live delivery is on.
        for group in groups {
            while logs[group]!.delivered < logs[group]!.entries.count { hubStep(group) }
            // Bounded: a cursor that never hands a group back must fail the test, not hang it.
            for _ in 0..<10_000 where !logs[group]!.replays.isEmpty { replayStep(group) }
            #expect(logs[group]!.replays.isEmpty, "seed \(seed): a replay never ended")
        }
        received(cursor.goLive())
        for group in groups where logs[group]!.member {
            #expect(client[group] == Int64(logs[group]!.entries.count), "seed \(seed): the client ends at \(String(describing: client[group])) of \(logs[group]!.entries.count)")
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
    }
}
