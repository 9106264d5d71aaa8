import Foundation
import RoostProtocol

/// A stream connection as the fanout knows it: a number the state machine hands out.
public struct SubscriberID: Hashable, Sendable, CustomStringConvertible {
    public let value: Int
    public init(_ value: Int) { self.value = value }
    public var description: String { "subscriber \(value)" }
}

/// What the database answers for one replay page (read in one snapshot with the checks that
/// the user is still in the group and still signed in).
public enum ReplayPage: Sendable, Equatable {
    case events([StreamEvent])
    /// Retention purged events after the replay's position: the group's first kept seq.
    case expired(oldestSeq: Int64)
    case notMember
    case sessionEnded
}

/// What the state machine asks its driver to do, in the order returned. `Sink` is the driver's
/// handle on a connection; the state machine stores it and hands it back, never calls it.
public enum FanoutAction<Sink> {
    /// Queue `frame` on every sink, in the given order: one event for many connections.
    case send([UInt8], to: [Sink])
    /// Start a closing handshake.
    case close(Sink, WebSocketCloseCode, reason: String)
    /// Read `group`'s log after `after` (through `through`, or to its end) and report with
    /// `logRead` or `logReadFailed`; `attempt` > 1 is a retry, to be made after a pause.
    case readLog(group: UUID, tenant: UUID, after: Int64, through: Int64?, attempt: Int)
    /// Read one replay page for a subscriber, once its sink's queue has drained below half its
    /// bound, and report with `replayRead`.
    case readReplay(ReplayRead, sink: Sink)
    /// Call `goLive` for the subscriber after the live grace period.
    case scheduleGoLive(SubscriberID, sink: Sink)
}

/// One replay page to read: whose, which group, from where, for which replay.
public struct ReplayRead: Sendable, Equatable {
    public let subscriber: SubscriberID
    public let tenant: UUID
    public let user: UUID
    public let session: SessionKey
    public let group: UUID
    public let after: Int64
    public let token: Int
}

/// The node's notification fanout as a pure state machine (DESIGN.md "How a request flows",
/// steps 4–5): which connections follow which groups, how far this node has delivered each
/// group, every connection's `StreamCursor`, resumes and their replays, and what membership
/// events and inter-node notices mean for them. Every input is a mutating method returning the
/// actions to carry out; it does no I/O, takes no lock and reads no clock, so it is tested
/// exhaustively without a database or a socket (Tests/RoostFanoutTests).
///
/// Notices name `tenant/group/seq` and usually carry the event's frame. A group's events reach
/// connections strictly in seq order: the next one in line with its frame goes straight out;
/// anything else (a gap, a frame too big for a notice, a catch-up after the LISTEN connection
/// was lost) becomes one log read at a time per group, from the last seq delivered. A lost or
/// late notice therefore costs latency, never an event.
public struct FanoutState<Sink> {
    struct Group {
        let tenant: UUID
        /// The highest seq handed to subscribers; nil until the first event after the group got
        /// its first local subscriber (a new subscriber's `ready` covers what came before).
        var delivered: Int64?
        /// The highest seq a notice named.
        var wanted: Int64 = 0
        /// A catch-up asks for the next read to go to the end of the log, whatever `wanted` says.
        var toEnd = false
        /// The next read starts here, below what was delivered: a join some stream here missed.
        var rewind: Int64?
        /// Whether a read of the log is in flight, and how far it goes.
        var read = Read.idle
        var reading: Bool { read != .idle }
        var readingToEnd: Bool { read == .reading(toEnd: true) }

        enum Read: Equatable {
            case idle
            /// One read at a time per group: to `wanted`, or (`toEnd`) to the end of the log,
            /// whose result says nothing of events committed after it, so a catch-up meanwhile
            /// sets `toEnd` again.
            case reading(toEnd: Bool)
        }
        var subscribers: Set<SubscriberID> = []
        /// Users streaming here whose join (at the given seq) is heard of but not yet delivered.
        var joiners: [UUID: Int64] = [:]
    }

    /// What happened to a subscriber before its `ready` (it subscribes, then reads its standing).
    enum Early {
        case live(UUID, Int64, [UInt8])
        /// At the event `seq` (nil: the group was deleted).
        case removed(UUID, seq: Int64?, reason: String)
        case joined(UUID, Int64)
    }

    struct Replay {
        let token: Int
        let groups: [UUID]
        var next = 0
    }

    struct Subscriber {
        let sink: Sink
        let tenant: UUID
        let user: UUID
        let session: SessionKey
        /// The groups whose events this node offers the subscriber (its cursor has the last word).
        var groups: SmallSet<UUID> = []
        /// Here, in what would be the padding after `groups` (fields keep their order).
        var resumesInWindow: Int32 = 0
        /// nil until `ready` went out.
        var cursor: StreamCursor<[UInt8]>?
        var resumeWindowStart: UInt64 = 0
        /// What a stream has only before its `ready` and while it resumes, out of line: an array
        /// of none or one, so an idle stream's slot keeps 8 bytes for it, not 40.
        private var passing: [Passing] = []

        struct Passing {
            var early: [Early] = []
            var replay: Replay?
            /// The newest resume waiting for the running replay (or for `ready`).
            var queued: [(UUID, Int64)]?
            var isEmpty: Bool { early.isEmpty && replay == nil && queued == nil }
        }

        init(sink: Sink, tenant: UUID, user: UUID, session: SessionKey) {
            self.sink = sink
            self.tenant = tenant
            self.user = user
            self.session = session
        }

        var early: [Early] {
            get { passing.first?.early ?? [] }
            set { changePassing { $0.early = newValue } }
        }

        var replay: Replay? {
            get { passing.first?.replay }
            set { changePassing { $0.replay = newValue } }
        }

        var queued: [(UUID, Int64)]? {
            get { passing.first?.queued }
            set { changePassing { $0.queued = newValue } }
        }

        private mutating func changePassing(_ change: (inout Passing) -> Void) {
            if passing.isEmpty { passing = [Passing()] }
            change(&passing[0])
            if passing[0].isEmpty { passing = [] }
        }

        /// A live event of a group the subscriber follows: held until `ready` went out, else
        /// given to the cursor; the sink when the frame is to be sent now.
        mutating func live(_ group: UUID, _ seq: Int64, _ frame: [UInt8]) -> Sink? {
            guard cursor != nil else {
                early.append(.live(group, seq, frame))
                return nil
            }
            return cursor!.sendsLive(group, seq: seq, frame: frame) ? sink : nil
        }
    }

    /// Events a replay reads per page; a shorter page ends the group's replay.
    public let replayPageSize: Int
    /// At most this many resumes per connection within `resumeWindowNanoseconds`.
    public let resumeLimit: Int
    public let resumeWindowNanoseconds: UInt64

    private(set) var groups: [UUID: Group] = [:]
    private(set) var subscribers = SlotTable<Subscriber>()
    /// Each user's streams here (one, mostly, which `SmallSet` keeps inline), by the last 8
    /// bytes of the user's id (`userKey`), random in every id Roost makes: 8 bytes an entry to
    /// the id's 16, where a collision only costs a comparison (`streams(of:)`). A session's
    /// streams are found among its user's, which its notice names.
    private var byUser: [UInt64: SmallSet<SubscriberID>] = [:]

    private static func userKey(_ user: UUID) -> UInt64 {
        withUnsafeBytes(of: user.uuid) { $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self) }
    }

    /// The user's streams here, in the order they opened.
    private func streams(of user: UUID) -> [SubscriberID] {
        (byUser[Self.userKey(user)] ?? []).filter { subscribers[$0]?.user == user }.sorted { $0.value < $1.value }
    }

    /// The user's open streams on this node (asked at every stream's handshake: counted in
    /// place, with no list made).
    public func streamCount(of user: UUID) -> Int {
        (byUser[Self.userKey(user)] ?? []).count { subscribers[$0]?.user == user }
    }

    public init(replayPageSize: Int = 200, resumeLimit: Int = 20, resumeWindowNanoseconds: UInt64 = 10_000_000_000) {
        self.replayPageSize = replayPageSize
        self.resumeLimit = resumeLimit
        self.resumeWindowNanoseconds = resumeWindowNanoseconds
    }

    /// Connections subscribed, and groups followed on this node.
    public var counts: (subscribers: Int, groups: Int) { (subscribers.count, groups.count) }

    public func isSubscribed(_ id: SubscriberID) -> Bool { subscribers[id] != nil }

    // MARK: - A connection's life

    /// A new stream connection: it hears its session's and its user's notices from now on.
    public mutating func register(_ sink: Sink, tenant: UUID, user: UUID, session: SessionKey) -> SubscriberID {
        let id = subscribers.insert(Subscriber(sink: sink, tenant: tenant, user: user, session: session))
        byUser[Self.userKey(user), default: []].insert(id)
        return id
    }

    /// The user's groups, read before their standing: events of these are offered from now on,
    /// so none committed after the standing read can be missed.
    public mutating func subscribe(_ id: SubscriberID, to list: [UUID]) {
        guard let subscriber = subscribers[id] else { return }
        for group in list { attach(id, to: group, tenant: subscriber.tenant) }
    }

    /// Where each group stands (its `last_seq`): `ready` goes out, live delivery is scheduled,
    /// and a resume sent meanwhile starts.
    public mutating func ready(_ id: SubscriberID, userID: UUID, standing: [(group: UUID, lastSeq: Int64)], now: UInt64) -> [FanoutAction<Sink>] {
        guard let subscriber = subscribers[id] else { return [] }
        var actions: [FanoutAction<Sink>] = []
        var cursor = StreamCursor<[UInt8]>(standing: standing)
        var removals: [(UUID, String)] = []
        for input in subscriber.early {
            switch input {
            case .live(let group, let seq, let frame): _ = cursor.live(group, seq: seq, frame: frame)
            case .removed(let group, let seq, let reason):
                // A standing read after the removal already knows (a group it lists the user
                // re-joined since).
                if cursor.follows(group) && !cursor.removed(group, at: seq) { continue }
                removals.append((group, reason))
            case .joined(let group, let seq): cursor.joined(group, at: seq)
            }
        }
        subscribers[id]!.early = []
        // Offered from now on: exactly the groups the cursor follows (a join seen before `ready`
        // counts; a group left between the two reads, or since, does not).
        for group in subscriber.groups where !cursor.follows(group) { detach(id, from: group) }
        for (group, seq) in standing where cursor.follows(group) {
            attach(id, to: group, tenant: subscriber.tenant)
            if groups[group]!.delivered == nil {
                groups[group]!.delivered = seq
                groups[group]!.wanted = max(groups[group]!.wanted, seq)
            }
        }
        subscribers[id]!.cursor = cursor
        actions.append(.send(StreamFrames.groups(type: "ready", userID: userID, standing.map { ($0.group, $0.lastSeq) }), to: [subscriber.sink]))
        // `ready` comes first: a removal heard before it is told right after it.
        for (group, reason) in removals { actions.append(.send(StreamFrames.groupRemoved(group, reason: reason), to: [subscriber.sink])) }
        actions.append(.scheduleGoLive(id, sink: subscriber.sink))
        if let queued = subscribers[id]!.queued {
            subscribers[id]!.queued = nil
            startReplay(id, queued, into: &actions)
        }
        return actions
    }

    /// Live delivery starts (the client's first frame, or the grace period after `ready`).
    public mutating func goLive(_ id: SubscriberID) -> [FanoutAction<Sink>] {
        guard let sink = subscribers[id]?.sink, subscribers[id]!.cursor != nil else { return [] }
        return subscribers[id]!.cursor!.goLive().map { .send($0, to: [sink]) }
    }

    /// The connection closed.
    public mutating func unsubscribe(_ id: SubscriberID) {
        guard let subscriber = subscribers.removeValue(forKey: id) else { return }
        for group in subscriber.groups { detach(id, from: group) }
        let key = Self.userKey(subscriber.user)
        byUser[key]?.remove(id)
        if byUser[key]?.isEmpty == true { byUser.removeValue(forKey: key) }
    }

    // MARK: - Resume and replay

    /// A `resume` frame: each named group is replayed from its cursor, then joins the live flow.
    /// One replay runs at a time per connection; a newer resume replaces one still waiting. More
    /// than `resumeLimit` within the window is refused with an error and a 1008 close.
    public mutating func resume(_ id: SubscriberID, cursors: [(UUID, Int64)], now: UInt64) -> [FanoutAction<Sink>] {
        guard var subscriber = subscribers[id] else { return [] }
        if now &- subscriber.resumeWindowStart > resumeWindowNanoseconds || subscriber.resumesInWindow == 0 {
            subscriber.resumeWindowStart = now
            subscriber.resumesInWindow = 0
        }
        subscriber.resumesInWindow += 1
        subscribers[id] = subscriber
        guard subscriber.resumesInWindow <= resumeLimit else {
            let seconds = resumeWindowNanoseconds / 1_000_000_000
            return [.send(StreamFrames.error(code: .rateLimited, message: "more than \(resumeLimit) resumes in \(seconds) s"), to: [subscriber.sink]),
                    .close(subscriber.sink, .policyViolation, reason: "too many resumes")]
        }
        // One replay at a time; a resume waiting for it is replaced by this newer one.
        guard subscriber.cursor != nil, subscriber.replay == nil else {
            subscribers[id]!.queued = cursors
            return []
        }
        var actions: [FanoutAction<Sink>] = []
        startReplay(id, cursors, into: &actions)
        return actions
    }

    /// A replay page read for `read`: its frames (those the cursor lets through), then the next
    /// page, the next group, or `resumed` and the next waiting resume.
    public mutating func replayRead(_ read: ReplayRead, _ page: ReplayPage) -> [FanoutAction<Sink>] {
        guard let subscriber = subscribers[read.subscriber], subscriber.cursor != nil,
              subscriber.replay?.token == read.token else { return [] }
        var actions: [FanoutAction<Sink>] = []
        switch page {
        case .sessionEnded:
            return [.close(subscriber.sink, .policyViolation, reason: "session ended")]
        case .notMember:
            subscribers[read.subscriber]!.cursor!.replayFoundGone(read.group, token: read.token)
            subscribers[read.subscriber]!.replay!.next += 1
        case .events(let events):
            let complete = events.count < replayPageSize
            let frames = subscribers[read.subscriber]!.cursor!.replayed(
                read.group, token: read.token, page: events.map { (seq: $0.seq, frame: StreamFrames.event($0)) }, complete: complete)
            for frame in frames { actions.append(.send(frame, to: [subscriber.sink])) }
            if complete { subscribers[read.subscriber]!.replay!.next += 1 }
        case .expired(let oldest):
            // The client learns it missed events for good, then gets everything kept, in order.
            if subscribers[read.subscriber]!.cursor!.replaySkipped(read.group, token: read.token, to: oldest - 1) {
                actions.append(.send(StreamFrames.reset(read.group, oldestSeq: oldest), to: [subscriber.sink]))
            }
        }
        continueReplay(read.subscriber, into: &actions)
        return actions
    }

    /// A replay page could not be read: the connection closes with 1013 and the client resumes.
    public func replayFailed(_ read: ReplayRead) -> [FanoutAction<Sink>] {
        guard let subscriber = subscribers[read.subscriber], subscriber.replay?.token == read.token else { return [] }
        return [.close(subscriber.sink, .tryAgainLater, reason: "database unavailable")]
    }

    private mutating func startReplay(_ id: SubscriberID, _ cursors: [(UUID, Int64)], into actions: inout [FanoutAction<Sink>]) {
        let sink = subscribers[id]!.sink
        let begun = subscribers[id]!.cursor!.beginReplay(cursors.map { (group: $0.0, after: $0.1) })
        for frame in begun.frames { actions.append(.send(frame, to: [sink])) }
        if !begun.unknown.isEmpty {
            let list = begun.unknown.map { $0.lowercasedText }.joined(separator: ", ")
            actions.append(.send(StreamFrames.error(code: .notFound, message: "not a group of yours: " + list), to: [sink]))
        }
        subscribers[id]!.replay = Replay(token: begun.token, groups: begun.accepted.map(\.0))
        continueReplay(id, into: &actions)
    }

    /// The next page to read, or, when every group is back in the live flow, `resumed`.
    private mutating func continueReplay(_ id: SubscriberID, into actions: inout [FanoutAction<Sink>]) {
        let subscriber = subscribers[id]!
        var replay = subscriber.replay!
        while replay.next < replay.groups.count {
            let group = replay.groups[replay.next]
            if let after = subscriber.cursor!.replayPosition(group, token: replay.token) {
                subscribers[id]!.replay = replay
                actions.append(.readReplay(ReplayRead(subscriber: id, tenant: subscriber.tenant, user: subscriber.user, session: subscriber.session,
                                                      group: group, after: after, token: replay.token), sink: subscriber.sink))
                return
            }
            replay.next += 1
        }
        subscribers[id]!.replay = nil
        actions.append(.send(StreamFrames.groups(type: "resumed", userID: nil, subscriber.cursor!.standing(of: replay.groups)), to: [subscriber.sink]))
        if let next = subscriber.queued {
            subscribers[id]!.queued = nil
            startReplay(id, next, into: &actions)
        }
    }

    // MARK: - Notices from the nodes

    /// One notice from the LISTEN connection (`NodeNotice`), in arrival order.
    public mutating func received(_ notice: NodeNotice) -> [FanoutAction<Sink>] {
        switch notice {
        case .event(let event): return received(event)
        case .groupDeleted(let tenant, let group):
            guard let found = groups[group], found.tenant == tenant else { return [] }
            return endMembership(of: found.subscribers, in: group, at: nil, reason: "deleted", forget: true)
        case .sessionEnded(let tenant, let user, let hash):
            // A hash that is not 64 hex digits (no node sends one) names no stream's session. An
            // older node's notice names no user: the session is looked for in every stream here.
            guard let session = SessionKey(hex: hash) else { return [] }
            guard let user else { return closing(subscribers.ids { $0.session == session }, tenant: tenant) }
            return closing(streams(of: user).filter { subscribers[$0]?.session == session }, tenant: tenant)
        case .accountEnded(let tenant, let user):
            return closing(streams(of: user), tenant: tenant)
        case .userNotice(let tenant, let user, let frame):
            let sinks = streams(of: user).compactMap { id in
                subscribers[id].flatMap { $0.tenant == tenant ? $0.sink : nil }
            }
            return sinks.isEmpty ? [] : [.send(WebSocketFrameEncoder.text(frame), to: sinks)]
        case .groupNotice(let tenant, let group, let hidden, let audience, let frame):
            // Whoever follows the group here now (ready sent, not removed); a notice has no seq,
            // so a subscriber still before its `ready` simply does not get it.
            guard let found = groups[group], found.tenant == tenant else { return [] }
            let sinks = found.subscribers.sorted { $0.value < $1.value }.compactMap { id in
                subscribers[id].flatMap { $0.cursor?.follows(group) == true && Self.sees($0.user, hiddenFrom: hidden, audience: audience) ? $0.sink : nil }
            }
            return sinks.isEmpty ? [] : [.send(WebSocketFrameEncoder.text(frame), to: sinks)]
        }
    }

    /// Closes the streams `ids` names (in the order they opened) that are of `tenant`.
    private func closing(_ ids: [SubscriberID], tenant: UUID) -> [FanoutAction<Sink>] {
        ids.compactMap { id in
            subscribers[id].flatMap { $0.tenant == tenant ? .close($0.sink, .policyViolation, reason: "session ended") : nil }
        }
    }

    private mutating func received(_ event: NodeNotice.Event) -> [FanoutAction<Sink>] {
        // A join (or an event that may be one, its frame left out) of someone who streams here:
        // the group is read on their behalf until it is delivered, even if nobody here follows it
        // (now, or once a removal before the join has been delivered).
        if let subject = event.subject, event.kind == .memberJoined || event.frame == nil,
           streams(of: subject).contains(where: { subscribers[$0]?.tenant == event.tenant }) {
            if groups[event.group] == nil { groups[event.group] = Group(tenant: event.tenant, delivered: event.seq - 1) }
            if groups[event.group]!.tenant == event.tenant && event.seq > (groups[event.group]!.delivered ?? 0) {
                groups[event.group]!.joiners[subject] = event.seq
            }
        }
        guard let found = groups[event.group] else { return [] }
        guard found.tenant == event.tenant else { return [] }
        if let delivered = found.delivered, event.seq <= delivered {
            // Already delivered, or covered by a newer stream's `ready`, unless it is a join whose
            // member has streams here that do not follow the group yet (opened before the join):
            // the group is read again from the join (once a read in flight is back), and every
            // cursor drops what it already has.
            guard let subject = event.subject, event.kind == .memberJoined || event.frame == nil,
                  streams(of: subject).contains(where: { subscribers[$0]?.tenant == event.tenant && subscribers[$0]?.groups.contains(event.group) == false })
            else { return [] }
            groups[event.group]!.rewind = min(found.rewind ?? event.seq - 1, event.seq - 1)
            groups[event.group]!.joiners[subject] = event.seq
            groups[event.group]!.wanted = max(found.wanted, delivered)
            return startReading(event.group).map { [$0] } ?? []
        }
        // The next event in line, with its frame at hand and no reader busy: no read needed.
        if let frame = event.frame, !found.reading, found.delivered.map({ $0 == event.seq - 1 }) ?? true, found.wanted < event.seq {
            return deliver(group: event.group, seq: event.seq, kind: event.kind ?? GroupEventKind(""), frame: WebSocketFrameEncoder.text(frame),
                           subject: event.subject, hiddenFrom: event.hiddenFrom, audience: event.audience)
        }
        groups[event.group]!.wanted = max(found.wanted, event.seq)
        return startReading(event.group).map { [$0] } ?? []
    }

    /// The LISTEN connection was re-established: notices sent meanwhile are gone, so every group
    /// followed here is read from its last delivered seq to the end of its log.
    public mutating func catchUp() -> [FanoutAction<Sink>] {
        var actions: [FanoutAction<Sink>] = []
        for group in groups.keys.sorted(by: { $0.uuidString < $1.uuidString }) {
            groups[group]!.toEnd = true
            if let read = startReading(group) { actions.append(read) }
        }
        return actions
    }

    // MARK: - Auditing

    /// The groups an audit asks the database about: those followed here that have delivered
    /// something (before that, the next `ready` or notice says where they stand), with how far.
    public func auditedGroups() -> [(tenant: UUID, group: UUID, delivered: Int64)] {
        groups.compactMap { id, group in
            guard let delivered = group.delivered, !group.subscribers.isEmpty else { return nil }
            return (group.tenant, id, delivered)
        }
    }

    /// `group`'s log was found to end at `lastSeq`, below what was delivered here: a failover to
    /// a standby that had not all of it gave those seqs to other events. Every stream here that
    /// had more is told `reset` (drop the group and reload it; the events from `lastSeq + 1` on
    /// follow) and then gets the events that now hold those seqs; delivery goes on from there.
    public mutating func regressed(_ group: UUID, tenant: UUID, to lastSeq: Int64) -> [FanoutAction<Sink>] {
        guard let found = groups[group], found.tenant == tenant, let delivered = found.delivered, lastSeq < delivered else { return [] }
        groups[group]!.delivered = lastSeq
        groups[group]!.wanted = lastSeq
        var sinks: [Sink] = []
        for id in found.subscribers.sorted(by: { $0.value < $1.value }) where subscribers[id]?.cursor?.rewound(group, to: lastSeq) == true {
            sinks.append(subscribers[id]!.sink)
        }
        return sinks.isEmpty ? [] : [.send(StreamFrames.reset(group, oldestSeq: lastSeq + 1), to: sinks)]
    }

    /// Where groups stood in the database (`last_seq`) a while ago: a group followed here that is
    /// still neither delivered nor being read that far lost a notice, and is read to there.
    /// Returns those reads, and the groups found behind with how far.
    public mutating func audited(_ standing: [(tenant: UUID, group: UUID, lastSeq: Int64)])
        -> (actions: [FanoutAction<Sink>], behind: [(group: UUID, by: Int64)])
    {
        var actions: [FanoutAction<Sink>] = []
        var behind: [(group: UUID, by: Int64)] = []
        for (tenant, group, lastSeq) in standing {
            guard let found = groups[group], found.tenant == tenant, let delivered = found.delivered,
                  max(delivered, found.wanted) < lastSeq else { continue }
            behind.append((group, lastSeq - max(delivered, found.wanted)))
            groups[group]!.wanted = lastSeq
            if let read = startReading(group) { actions.append(read) }
        }
        return (actions, behind)
    }

    // MARK: - Reading the log

    private mutating func startReading(_ group: UUID) -> FanoutAction<Sink>? {
        guard groups[group] != nil, !groups[group]!.reading else { return nil }
        groups[group]!.read = .reading(toEnd: false)
        return nextRead(group, attempt: 1)
    }

    /// The read that brings `group` to `wanted` (or to the end of its log after a catch-up), or
    /// nil (and the reader stops) when it is there.
    private mutating func nextRead(_ group: UUID, attempt: Int) -> FanoutAction<Sink>? {
        guard groups[group] != nil else { return nil }
        if let rewind = groups[group]!.rewind {
            groups[group]!.rewind = nil
            groups[group]!.delivered = min(groups[group]!.delivered ?? rewind, rewind)
        }
        let found = groups[group]!
        if found.reading { groups[group]!.read = .reading(toEnd: false) }
        let after = found.delivered ?? (found.toEnd ? nil : found.wanted - 1)
        guard let after, found.wanted > after || found.toEnd, !found.subscribers.isEmpty || !found.joiners.isEmpty else {
            groups[group]!.read = .idle
            // A catch-up before anything was delivered has nothing to read from: the first
            // `ready` or notice sets where the group stands.
            if found.delivered == nil {
                groups[group]!.wanted = 0
                groups[group]!.toEnd = false
            }
            if found.subscribers.isEmpty {
                groups.removeValue(forKey: group)
            } else if !found.joiners.isEmpty, let delivered = found.delivered {
                // A join the log did not have where its notice said is not waited for.
                groups[group]!.joiners = found.joiners.filter { $0.value > delivered }
            }
            return nil
        }
        groups[group]!.toEnd = false
        groups[group]!.read = .reading(toEnd: found.toEnd)
        return .readLog(group: group, tenant: found.tenant, after: after, through: found.toEnd ? nil : found.wanted, attempt: attempt)
    }

    /// Events read from `group`'s log after `after`, in seq order: they are delivered, then the
    /// next read follows if more are wanted.
    public mutating func logRead(_ group: UUID, after: Int64, _ page: [StreamEvent]) -> [FanoutAction<Sink>] {
        guard groups[group] != nil else { return [] }
        var actions: [FanoutAction<Sink>] = []
        if page.isEmpty {
            let top = groups[group]!.delivered ?? after
            groups[group]!.delivered = top
            // A gap of a group deleted meanwhile is given up; after a catch-up's read to the end,
            // a notice that came meanwhile is still read.
            if !groups[group]!.readingToEnd { groups[group]!.wanted = top }
        } else if groups[group]!.readingToEnd {
            // A read to the end goes on page by page until it finds nothing more.
            groups[group]!.toEnd = true
        }
        for event in page {
            guard groups[group] != nil else { break }
            if let delivered = groups[group]!.delivered, event.seq <= delivered { continue }
            actions += deliver(group: group, seq: event.seq, kind: event.event, frame: StreamFrames.event(event),
                               subject: event.event.changesMembership ? event.subject : nil,
                               hiddenFrom: event.hiddenFrom, audience: event.audience)
        }
        if let read = nextRead(group, attempt: 1) { actions.append(read) }
        return actions
    }

    /// A log read failed (the database is away): the same read again, after a pause, while
    /// anyone still follows the group.
    public mutating func logReadFailed(_ group: UUID, attempt: Int) -> [FanoutAction<Sink>] {
        guard groups[group] != nil else { return [] }
        if groups[group]!.readingToEnd { groups[group]!.toEnd = true }
        return nextRead(group, attempt: attempt + 1).map { [$0] } ?? []
    }

    // MARK: - Delivering

    /// Hands one event (callers keep each group's in seq order) to the group's subscribers, and
    /// applies what a membership event means for this node's streams; `subject` is the member
    /// it is about, `hiddenFrom` the one user whose streams it passes by (a duress alert's walker)
    /// or `Audience.managersOnly`, and then `audience` the only users whose streams get it.
    private mutating func deliver(group: UUID, seq: Int64, kind: GroupEventKind, frame: [UInt8], subject: UUID?, hiddenFrom: UUID? = nil,
                                  audience: [UUID]? = nil) -> [FanoutAction<Sink>]
    {
        guard groups[group] != nil else { return [] }
        if let subject, kind == .memberJoined, let pending = groups[group]!.joiners[subject], pending <= seq { groups[group]!.joiners[subject] = nil }
        groups[group]!.delivered = seq
        groups[group]!.wanted = max(groups[group]!.wanted, seq)
        let tenant = groups[group]!.tenant
        if let subject, kind == .memberJoined {
            for id in streams(of: subject) where subscribers[id]?.tenant == tenant {
                attach(id, to: group, tenant: tenant)
                if subscribers[id]!.cursor == nil {
                    subscribers[id]!.early.append(.joined(group, seq))
                } else {
                    subscribers[id]!.cursor!.joined(group, at: seq)
                }
            }
        }
        var leaving: [SubscriberID] = []
        if let subject, kind.endsMembership {
            // Not for a stream whose `ready` came after a re-join, or that has sent events past
            // this one: it is old news there.
            leaving = groups[group]!.subscribers.filter { id in
                subscribers[id]?.user == subject && subscribers[id]?.cursor?.hasAccounted(group, through: seq) != true
            }.sorted { $0.value < $1.value }
            for id in leaving { detach(id, from: group) }
        }
        var sinks: [Sink] = []
        if let receivers = groups[group]?.subscribers {
            sinks.reserveCapacity(receivers.count)
            // In place, one lookup per subscriber: the hot loop of every delivery copies no
            // subscriber (a copy of one is a cursor's worth of retains).
            // An event hidden from one user (a duress alert and what follows it) passes that
            // user's streams by; their cursors skip the seq like one that was never theirs.
            for id in receivers {
                guard hiddenFrom == nil || (subscribers[id]?.user).map({ Self.sees($0, hiddenFrom: hiddenFrom, audience: audience) }) == true
                else { continue }
                if let sink = subscribers[id]?.live(group, seq, frame) { sinks.append(sink) }
            }
        }
        var actions: [FanoutAction<Sink>] = sinks.isEmpty ? [] : [.send(frame, to: sinks)]
        if !leaving.isEmpty {
            actions += endMembership(of: Set(leaving), in: group, at: seq, reason: kind == .memberLeft ? "left" : "removed", forget: false)
        }
        return actions
    }

    /// Whether `user`'s streams get an event or notice hidden from `hiddenFrom`: from one user,
    /// everyone else's do; from all but the managers (`Audience.managersOnly`), only those in
    /// `audience` (none when it is missing: such an event is never sent to the wrong streams).
    static func sees(_ user: UUID, hiddenFrom: UUID?, audience: [UUID]?) -> Bool {
        guard let hiddenFrom else { return true }
        guard hiddenFrom == Audience.managersOnly else { return user != hiddenFrom }
        return audience?.contains(user) == true
    }

    /// The subscribers are no longer in `group`: nothing more of it reaches them, and each gets
    /// the `group.removed` notice. `forget`: the group itself is gone.
    private mutating func endMembership(of ids: Set<SubscriberID>, in group: UUID, at seq: Int64?, reason: String, forget: Bool)
        -> [FanoutAction<Sink>]
    {
        if forget {
            for id in groups[group]?.subscribers ?? [] { subscribers[id]?.groups.remove(group) }
            groups.removeValue(forKey: group)
        }
        var sinks: [Sink] = []
        for id in ids.sorted(by: { $0.value < $1.value }) {
            guard subscribers[id] != nil else { continue }
            detach(id, from: group)
            if subscribers[id]!.cursor == nil {
                subscribers[id]!.early.append(.removed(group, seq: seq, reason: reason))
                continue
            }
            // Told even when the cursor had already let go (a replay found the user gone).
            subscribers[id]!.cursor!.removed(group, at: seq)
            sinks.append(subscribers[id]!.sink)
        }
        return sinks.isEmpty ? [] : [.send(StreamFrames.groupRemoved(group, reason: reason), to: sinks)]
    }

    // MARK: - Subscription table

    private mutating func attach(_ id: SubscriberID, to group: UUID, tenant: UUID) {
        subscribers[id]!.groups.insert(group)
        if groups[group] == nil { groups[group] = Group(tenant: tenant) }
        groups[group]!.subscribers.insert(id)
    }

    private mutating func detach(_ id: SubscriberID, from group: UUID) {
        subscribers[id]?.groups.remove(group)
        guard groups[group] != nil else { return }
        groups[group]!.subscribers.remove(id)
        // A group nobody here follows is forgotten; its next subscriber starts afresh.
        if groups[group]!.subscribers.isEmpty && !groups[group]!.reading { groups.removeValue(forKey: group) }
    }
}
