import Foundation
import RoostPersistence
import RoostProtocol
import Synchronization

/// One live stream connection, as the hub sees it. Calls come from the hub's tasks, one group's
/// events strictly in seq order; implementations must not block.
public protocol StreamSubscriber: AnyObject, Sendable {
    var tenantID: UUID { get }
    var userID: UUID { get }
    /// Lower-case hex SHA-256 of the session token the stream signed in with.
    var sessionHash: String { get }
    /// An event of a group this subscriber is on, with its frame (the same bytes for everyone).
    /// To send it now, the subscriber adds its connection to `batch`; the hub then hands the
    /// frame to every connection in the batch at once (one hop per event loop, not one per
    /// subscriber).
    func deliver(_ event: StreamEvent, frame: [UInt8], into batch: inout FrameBatch)
    /// The user joined `group`: its events from `seq` (the `member.joined` event, delivered next) are theirs.
    func joined(_ group: UUID, at seq: Int64)
    /// The user is no longer in `group`: the hub has already stopped its events.
    func removed(from group: UUID, notice: [UInt8])
    /// The user's session (or account) ended: close with 1008.
    func sessionEnded()
    /// A notice addressed to the user, not to a group (e.g. `bridge.offline`), as a frame.
    func notice(_ frame: [UInt8])
}

/// Connections that are to get one frame, gathered while the hub walks a group's subscribers.
public struct FrameBatch {
    public var targets: [AnyObject] = []
    public init() {}
}

/// The node's side of fanout (DESIGN.md "How a request flows", steps 4–5). Notifications name
/// only `tenant/group/seq`; for each group with local subscribers the hub reads the events it
/// has not delivered yet from the log, in seq order, one reader per group at a time, encodes
/// each event once and hands the same frame to every subscriber. Because it always reads from
/// the last seq it delivered, a lost or late notification costs latency, never an event.
///
/// All nodes share one notification channel (`roost_events`) rather than a channel per group:
/// a node then needs one LISTEN, and never a LISTEN/UNLISTEN round trip as members come and
/// go; the price is that each node sees every group's notices (a few dozen bytes each) and
/// drops those of groups nobody on it follows, a hash lookup.
public final class FanoutHub: Sendable {
    struct GroupState {
        let tenant: UUID
        /// The highest seq handed to subscribers; nil until the first event after the group
        /// got its first local subscriber (subscribers replay or start from `ready` themselves).
        var delivered: Int64?
        /// The highest seq known to exist (from notifications); `Int64.max` asks for a full catch-up.
        var wanted: Int64 = 0
        var reading = false
        var subscribers: [ObjectIdentifier: any StreamSubscriber] = [:]
    }

    struct State {
        var groups: [UUID: GroupState] = [:]
        var byUser: [UUID: [ObjectIdentifier: any StreamSubscriber]] = [:]
        var bySession: [String: [ObjectIdentifier: any StreamSubscriber]] = [:]
        /// Groups each subscriber is on, to unsubscribe it in one step.
        var groupsOf: [ObjectIdentifier: Set<UUID>] = [:]
    }

    private let pool: ConnectionPool
    private let state = Mutex(State())
    private let pageSize: Int
    private let onError: @Sendable (String) -> Void
    private let send: @Sendable ([UInt8], [AnyObject]) -> Void

    /// `send(frame, targets)` writes one frame to the connections subscribers put in a batch.
    public init(pool: ConnectionPool, pageSize: Int = 500, onError: @escaping @Sendable (String) -> Void = { _ in },
                send: @escaping @Sendable ([UInt8], [AnyObject]) -> Void) {
        self.pool = pool
        self.pageSize = pageSize
        self.onError = onError
        self.send = send
    }

    /// Subscribed connections and the groups they follow on this node.
    public var counts: (subscribers: Int, groups: Int) {
        state.withLock { ($0.groupsOf.count, $0.groups.count) }
    }

    // MARK: - Subscriptions

    /// Registers a stream on its user's groups. Call before reading the groups' `last_seq`
    /// for `ready`, so no event committed after that read can be missed.
    public func subscribe(_ subscriber: any StreamSubscriber, to groups: [UUID]) {
        let id = ObjectIdentifier(subscriber)
        state.withLock { state in
            state.byUser[subscriber.userID, default: [:]][id] = subscriber
            state.bySession[subscriber.sessionHash, default: [:]][id] = subscriber
            state.groupsOf[id, default: []].formUnion(groups)
            for group in groups {
                state.groups[group, default: GroupState(tenant: subscriber.tenantID)].subscribers[id] = subscriber
            }
        }
    }

    /// Tells the hub where a new subscriber starts a group (the `last_seq` its `ready` or
    /// replay covers), so a group new to this node is read from there, not from its next notice.
    public func started(_ group: UUID, at seq: Int64) {
        state.withLock { state in
            guard state.groups[group] != nil, state.groups[group]!.delivered == nil else { return }
            state.groups[group]!.delivered = seq
            state.groups[group]!.wanted = max(state.groups[group]!.wanted, seq)
        }
    }

    public func unsubscribe(_ subscriber: any StreamSubscriber) {
        let id = ObjectIdentifier(subscriber)
        state.withLock { state in
            for group in state.groupsOf.removeValue(forKey: id) ?? [] { Self.remove(id, from: group, in: &state) }
            state.byUser[subscriber.userID]?.removeValue(forKey: id)
            if state.byUser[subscriber.userID]?.isEmpty == true { state.byUser.removeValue(forKey: subscriber.userID) }
            state.bySession[subscriber.sessionHash]?.removeValue(forKey: id)
            if state.bySession[subscriber.sessionHash]?.isEmpty == true { state.bySession.removeValue(forKey: subscriber.sessionHash) }
        }
    }

    private static func remove(_ id: ObjectIdentifier, from group: UUID, in state: inout State) {
        state.groups[group]?.subscribers.removeValue(forKey: id)
        state.groupsOf[id]?.remove(group)
        // A group nobody here follows is forgotten; its next subscriber starts afresh.
        if state.groups[group]?.subscribers.isEmpty == true && state.groups[group]?.reading == false {
            state.groups.removeValue(forKey: group)
        }
    }

    // MARK: - Notifications

    /// Payloads from the LISTEN connection, in arrival order (formats: `GroupEventLog`).
    public func received(_ payloads: [String]) {
        for payload in payloads { handle(payload) }
    }

    /// After the LISTEN connection was re-established: notifications sent meanwhile are gone,
    /// so every group served here is read from its last delivered seq to the end of its log.
    public func catchUp() {
        let groups = state.withLock { state -> [UUID] in
            for group in state.groups.keys { state.groups[group]!.wanted = Int64.max }
            return Array(state.groups.keys)
        }
        for group in groups { startReading(group) }
    }

    private func handle(_ notification: String) {
        // An event's notice may carry its frame after a newline (GroupEventLog's formats).
        let split = notification.firstIndex(of: "\n")
        let payload = split.map { notification[..<$0] } ?? notification[...]
        let parts = payload.split(separator: "/", omittingEmptySubsequences: false)
        switch parts.first {
        case "g" where parts.count == 3:
            guard let group = UUID(uuidString: String(parts[2])) else { return }
            groupDeleted(group)
        case "s" where parts.count == 3:
            let ended = state.withLock { Array(($0.bySession[String(parts[2])] ?? [:]).values) }
            for subscriber in ended { subscriber.sessionEnded() }
        case "n" where parts.count == 3:
            // A notice to one user: the frame follows the header.
            guard let user = UUID(uuidString: String(parts[2])), let split else { return }
            let streams = state.withLock { Array(($0.byUser[user] ?? [:]).values) }
            guard !streams.isEmpty else { return }
            let frame = WebSocketFrameEncoder.text(String(notification[notification.index(after: split)...]))
            for subscriber in streams { subscriber.notice(frame) }
        case "u" where parts.count == 3:
            guard let user = UUID(uuidString: String(parts[2])) else { return }
            let ended = state.withLock { Array(($0.byUser[user] ?? [:]).values) }
            for subscriber in ended { subscriber.sessionEnded() }
        default:
            guard parts.count == 3 || parts.count == 4, let tenant = UUID(uuidString: String(parts[0])),
                  let group = UUID(uuidString: String(parts[1])), let seq = Int64(parts[2]) else { return }
            let subject = parts.count == 4 ? UUID(uuidString: String(parts[3])) : nil
            enum Next { case ignore, read, deliver }
            let next = state.withLock { state -> Next in
                if state.groups[group] == nil {
                    // Nobody here follows the group, unless this event is about someone who
                    // streams here (a member who just joined starts receiving it at once).
                    guard let subject, let streams = state.byUser[subject], !streams.isEmpty else { return .ignore }
                    state.groups[group] = GroupState(tenant: tenant, delivered: seq - 1, subscribers: streams)
                    for id in streams.keys { state.groupsOf[id, default: []].insert(group) }
                }
                let found = state.groups[group]!
                if let delivered = found.delivered, seq <= delivered { return .ignore }
                // The next event in line, with its frame at hand and no reader busy: no read needed.
                if split != nil && !found.reading && (found.delivered.map { $0 == seq - 1 } ?? true) && found.wanted < seq {
                    return .deliver
                }
                state.groups[group]!.wanted = max(found.wanted, seq)
                return .read
            }
            switch next {
            case .ignore: return
            case .read: startReading(group)
            case .deliver:
                let frame = String(notification[notification.index(after: split!)...])
                let name = Self.eventName(inFrame: frame) ?? ""
                deliver(StreamEvent(group: group, seq: seq, event: name, at: "", data: ""), frame: WebSocketFrameEncoder.text(frame), subject: subject)
            }
        }
    }

    private func groupDeleted(_ group: UUID) {
        let removed = state.withLock { state -> [any StreamSubscriber] in
            guard let found = state.groups.removeValue(forKey: group) else { return [] }
            for id in found.subscribers.keys { state.groupsOf[id]?.remove(group) }
            return Array(found.subscribers.values)
        }
        let notice = StreamFrames.groupRemoved(group, reason: "deleted")
        for subscriber in removed { subscriber.removed(from: group, notice: notice) }
    }

    // MARK: - Reading and delivering

    private func startReading(_ group: UUID) {
        let start = state.withLock { state -> Bool in
            guard var found = state.groups[group], !found.reading else { return false }
            found.reading = true
            state.groups[group] = found
            return true
        }
        guard start else { return }
        Task { await read(group) }
    }

    /// Reads and delivers until the group's log is delivered through `wanted`.
    private func read(_ group: UUID) async {
        var failures = 0
        while true {
            let next = state.withLock { state -> (tenant: UUID, after: Int64, through: Int64?)? in
                guard let found = state.groups[group] else { return nil }
                let after = found.delivered ?? (found.wanted == Int64.max ? nil : found.wanted - 1)
                guard let after, found.wanted > after, !found.subscribers.isEmpty else {
                    state.groups[group]!.reading = false
                    if found.subscribers.isEmpty { state.groups.removeValue(forKey: group) }
                    return nil
                }
                return (found.tenant, after, found.wanted == Int64.max ? nil : found.wanted)
            }
            guard let next else { return }
            let page: [StreamEvent]
            do {
                let limit = pageSize
                page = try await pool.withConnection { connection in
                    try connection.withTenantTransaction(next.tenant) {
                        try GroupEventLog().streamEvents(group: group, after: next.after, through: next.through, limit: limit, on: $0)
                    }
                }
                failures = 0
            } catch {
                failures += 1
                onError("fanout: reading group \(group.uuidString.lowercased()) failed: \(error)")
                // The database is away: try again, more slowly, while anyone still follows the group.
                try? await Task.sleep(for: .milliseconds(min(2000, 50 << min(failures, 6))))
                continue
            }
            if page.isEmpty {
                // A catch-up that found nothing new, or an event of a group deleted meanwhile.
                state.withLock { state in
                    guard state.groups[group] != nil else { return }
                    let top = state.groups[group]!.delivered ?? next.after
                    state.groups[group]!.delivered = top
                    state.groups[group]!.wanted = top
                }
                continue
            }
            for event in page {
                let subject = event.event.hasPrefix("member.") ? Self.userID(in: event.data) : nil
                deliver(event, frame: StreamFrames.event(event), subject: subject)
            }
        }
    }

    /// Hands one event to the group's subscribers (in seq order: callers guarantee it) and applies
    /// what a membership event means for this node's streams; `subject` is the member it is about.
    private func deliver(_ event: StreamEvent, frame: [UInt8], subject: UUID?) {
        let membership = subject
        var leaving: [any StreamSubscriber] = []
        var joining: [any StreamSubscriber] = []
        let receivers = state.withLock { state -> [any StreamSubscriber] in
            guard state.groups[event.group] != nil else { return [] }
            state.groups[event.group]!.delivered = event.seq
            state.groups[event.group]!.wanted = max(state.groups[event.group]!.wanted, event.seq)
            if let user = membership, event.event == "member.joined" {
                for (id, subscriber) in state.byUser[user] ?? [:] {
                    joining.append(subscriber)
                    state.groups[event.group]!.subscribers[id] = subscriber
                    state.groupsOf[id, default: []].insert(event.group)
                }
            }
            if let user = membership, event.event == "member.left" || event.event == "member.removed" {
                for (id, subscriber) in state.groups[event.group]!.subscribers where subscriber.userID == user {
                    leaving.append(subscriber)
                    state.groups[event.group]!.subscribers.removeValue(forKey: id)
                    state.groupsOf[id]?.remove(event.group)
                }
            }
            return Array(state.groups[event.group]!.subscribers.values)
        }
        for subscriber in joining { subscriber.joined(event.group, at: event.seq) }
        var batch = FrameBatch()
        batch.targets.reserveCapacity(receivers.count)
        for subscriber in receivers { subscriber.deliver(event, frame: frame, into: &batch) }
        if !batch.targets.isEmpty { send(frame, batch.targets) }
        if !leaving.isEmpty {
            let notice = StreamFrames.groupRemoved(event.group, reason: event.event == "member.left" ? "left" : "removed")
            for subscriber in leaving { subscriber.removed(from: event.group, notice: notice) }
        }
    }

    /// The `event` name in an event frame built by `StreamEvent.frameJSON`.
    static func eventName(inFrame frame: String) -> String? {
        guard let start = frame.range(of: "\"event\":\"") else { return nil }
        let rest = frame[start.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }

    /// `user_id` of a membership event's data.
    static func userID(in data: String) -> UUID? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any],
              let text = object["user_id"] as? String else { return nil }
        return UUID(uuidString: text)
    }
}
