import Foundation
import RoostFanout
import RoostPersistence
import RoostTestSupport
import Synchronization
import Testing

/// A subscriber that records what the hub gives it.
final class RecordingSubscriber: StreamSubscriber, @unchecked Sendable {
    // `@unchecked Sendable`: every field is behind `log`.
    let tenantID: UUID
    let userID: UUID
    let sessionHash: String
    let log = Mutex<(seqs: [Int64], removed: [UUID], ended: Int, notices: Int)>(([], [], 0, 0))

    init(tenant: UUID, user: UUID = UUID(), session: String = "feed") {
        tenantID = tenant
        userID = user
        sessionHash = session
    }

    func deliver(_ event: StreamEvent, frame: [UInt8], into batch: inout FrameBatch) {
        log.withLock { $0.seqs.append(event.seq) }
        batch.targets.append(self)
    }
    func joined(_ group: UUID, at seq: Int64) {}
    func removed(from group: UUID, notice: [UInt8]) { log.withLock { $0.removed.append(group) } }
    func sessionEnded() { log.withLock { $0.ended += 1 } }
    func notice(_ frame: [UInt8]) { log.withLock { $0.notices += 1 } }

    var seqs: [Int64] { log.withLock { $0.seqs } }

    /// Waits (bounded) until `condition` holds.
    func await(_ condition: @escaping (RecordingSubscriber) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition(self) && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        return condition(self)
    }
}

/// The hub fed notifications by hand: in-order frames go straight through, gaps are read from
/// the log, repeats are dropped, and notices about sessions and groups reach their streams.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct FanoutHubTests {
    let pool: ConnectionPool
    let tenant: UUID
    let group: UUID
    /// Frames the hub sent, with how many connections each went to.
    final class Sent: Sendable {
        let frames = Mutex<[(String, Int)]>([])
    }
    let sent = Sent()

    init() throws {
        let setup = try TestDatabase.migratedConnection()
        tenant = try TenantStore().create(slug: "hub-\(UUID().uuidString.prefix(8).lowercased())", name: "Hub", registration: .open, on: setup).id
        let tenant = self.tenant
        group = try setup.withTenantTransaction(tenant) { connection in
            let owner = try UserStore().create(tenant: tenant, email: "hub@example.org", phone: nil, passwordHash: "x", displayName: "Hub", on: connection)
            return try GroupStore().create(tenant: tenant, owner: owner.id, name: "Hub", description: "", on: connection).id
        }
        pool = ConnectionPool(configuration: TestDatabase.configuration(), options: .init(maxConnections: 2))
    }

    func hub() -> FanoutHub {
        let sent = self.sent
        return FanoutHub(pool: pool) { frame, targets in
            sent.frames.withLock { $0.append((String(decoding: frame.dropFirst(frame.count < 126 + 2 ? 2 : 4), as: UTF8.self), targets.count)) }
        }
    }

    /// Appends `count` chat events to the group's log (seq 2, 3, ...) and returns their notices.
    func append(_ count: Int) throws -> [String] {
        let (tenant, group) = (self.tenant, self.group)
        let connection = try TestDatabase.connect()
        return try connection.withTenantTransaction(tenant) { connection in
            try (0..<count).map { index in
                let event = try GroupEventLog().append(tenant: tenant, group: group, event: "group.updated", actorType: "system", actorID: nil,
                                                       data: RawJSON(#"{"n":\#(index)}"#), on: connection)
                let frame = StreamEvent(group: group, seq: event.seq, event: "group.updated", at: "2026-11-21T00:00:00.000Z",
                                        data: #"{"n":\#(index)}"#).frameJSON
                return GroupEventLog.eventPayload(tenant: tenant, group: group, seq: event.seq) + "\n" + frame
            }
        }
    }

    @Test func framesInOrderGoStraightThroughOnceToEverySubscriber() async throws {
        let hub = hub()
        let (one, two) = (RecordingSubscriber(tenant: tenant), RecordingSubscriber(tenant: tenant))
        hub.subscribe(one, to: [group])
        hub.subscribe(two, to: [group])
        hub.started(group, at: 1)
        let notices = try append(3)
        hub.received(notices)
        hub.received([notices[1]])  // a repeat is dropped
        #expect(one.seqs == [2, 3, 4] && two.seqs == [2, 3, 4])
        #expect(sent.frames.withLock { $0.map(\.1) } == [2, 2, 2], "one batch per event, to both connections")
        #expect(sent.frames.withLock { $0.first?.0.contains(#""event":"group.updated""#) } == true)
        hub.unsubscribe(one)
        hub.unsubscribe(two)
        #expect(hub.counts == (0, 0))
        pool.close()
    }

    @Test func aGapIsReadFromTheLogInOrder() async throws {
        let hub = hub()
        let subscriber = RecordingSubscriber(tenant: tenant)
        hub.subscribe(subscriber, to: [group])
        hub.started(group, at: 1)
        let notices = try append(5)
        // Only the last notice arrives (the others were lost): the hub reads 2...6 from the log.
        hub.received([notices[4]])
        #expect(await subscriber.await { $0.seqs.count == 5 })
        #expect(subscriber.seqs == [2, 3, 4, 5, 6])
        // A notice without its frame (too big to carry one) is read too.
        let more = try append(1)
        hub.received([String(more[0].prefix { $0 != "\n" })])
        #expect(await subscriber.await { $0.seqs.count == 6 })
        #expect(subscriber.seqs.last == 7)
        hub.unsubscribe(subscriber)
        pool.close()
    }

    @Test func sessionAndGroupNoticesReachTheirStreamsOnly() async throws {
        let hub = hub()
        let user = UUID()
        let mine = RecordingSubscriber(tenant: tenant, user: user, session: "aa")
        let other = RecordingSubscriber(tenant: tenant, session: "bb")
        hub.subscribe(mine, to: [group])
        hub.subscribe(other, to: [group])
        hub.received(["s/\(tenant.uuidString.lowercased())/aa"])
        #expect(mine.log.withLock { $0.ended } == 1 && other.log.withLock { $0.ended } == 0)
        hub.received(["n/\(tenant.uuidString.lowercased())/\(user.uuidString.lowercased())\n{\"type\":\"notice\"}"])
        #expect(mine.log.withLock { $0.notices } == 1 && other.log.withLock { $0.notices } == 0)
        hub.received(["u/\(tenant.uuidString.lowercased())/\(user.uuidString.lowercased())"])
        #expect(mine.log.withLock { $0.ended } == 2 && other.log.withLock { $0.ended } == 0)
        hub.received(["g/\(tenant.uuidString.lowercased())/\(group.uuidString.lowercased())"])
        #expect(mine.log.withLock { $0.removed } == [group] && other.log.withLock { $0.removed } == [group])
        // Garbage is ignored.
        hub.received(["", "x/y", "not/a/notice/at/all", "\n{}"])
        #expect(hub.counts.groups == 0)
        pool.close()
    }
}
