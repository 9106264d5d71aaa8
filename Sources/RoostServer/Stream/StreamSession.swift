import Foundation
import RoostFanout
import RoostPersistence
import RoostProtocol
import Synchronization

/// One `GET /v1/stream` connection (API.md "The stream"): `ready` first, then live events of
/// the user's groups; a `resume` replays each named group from its cursor and joins it to the
/// live flow without a gap or a duplicate.
///
/// Exactly once, per group: the hub delivers live events in seq order; `lastSent` is the
/// highest seq this connection has sent, and anything at or below it is dropped. While a group
/// is being replayed its live events are held back, then sent after the replay if still newer.
///
/// Live delivery starts with the client's first frame (normally its `resume`) or `liveGrace`
/// after `ready`, whichever comes first; until then live events wait. A client that resumes
/// right after `ready` thus never sees a live event ahead of the replay it asked for. A resume
/// of a group that has gone live since replays from the cursor again, so events the client
/// already had on this connection may repeat (in order); clients drop seqs at or below their
/// cursor.
final class StreamSession: WebSocketSession, StreamSubscriber {
    struct State {
        var channel: WebSocketChannel?
        /// Until live delivery starts (see above), live events wait here.
        var pending: [(StreamEvent, [UInt8])]? = []
        var readySent = false
        var lastSent: [UUID: Int64] = [:]
        var replaying: [UUID: [(StreamEvent, [UInt8])]] = [:]
        var closed = false
        var resumes: Task<Void, Never>?
        /// Resumes queued so far: the last one in line knows itself by this number.
        var resumesQueued = 0
        /// Resumes asked for before `ready` went out, started right after it.
        var early: [[(UUID, Int64)]] = []
    }

    let tenantID: UUID
    let userID: UUID
    let sessionHash: String
    private let hub: FanoutHub
    private let pool: ConnectionPool
    private let queueLimit: Int
    private let state = Mutex(State())
    static let replayPage = 200
    /// Milliseconds after `ready` at which live delivery starts without a client frame.
    private let liveGrace: Int

    init(user: User, sessionHash: String, hub: FanoutHub, pool: ConnectionPool, queueLimit: Int, liveGrace: Int = 2000) {
        self.liveGrace = liveGrace
        tenantID = user.tenantID
        userID = user.id
        self.sessionHash = sessionHash
        self.hub = hub
        self.pool = pool
        self.queueLimit = queueLimit
    }

    var acceptsBinary: Bool { false }

    func opened(_ channel: WebSocketChannel) {
        state.withLock { $0.channel = channel }
        Task { await start(channel) }
    }

    /// Subscribes first, then reads where each group stands, so nothing committed in between is
    /// lost. One transaction: at READ COMMITTED each statement sees what was committed before it
    /// began, so the reads after `subscribe` see every event whose notice could have come earlier.
    private func start(_ channel: WebSocketChannel) async {
        let (tenant, user, hash, hub) = (tenantID, userID, sessionHash, hub)
        do {
            let standing = try await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant) { connection -> [(UUID, Int64)]? in
                    hub.subscribe(self, to: try GroupStore().groups(of: user, on: connection).map(\.id))
                    // The session is checked after subscribing: its end may have been announced
                    // before this stream was subscribed to hear it.
                    guard try UserStore().sessionIsActive(tokenHashHex: hash, on: connection) else { return nil }
                    return try GroupStore().groups(of: user, on: connection).map { ($0.id, $0.lastSeq) }
                }
            }
            guard let standing else {
                channel.close(.policyViolation, reason: "session ended")
                return
            }
            for (group, seq) in standing { hub.started(group, at: seq) }
            state.withLock { state in
                for (group, seq) in standing { state.lastSent[group] = seq }
                channel.send(frame: StreamFrames.groups(type: "ready", userID: user, standing))
                state.readySent = true
                for cursors in state.early { enqueueResume(cursors, on: channel, &state) }
                state.early = []
            }
            channel.schedule(afterMilliseconds: liveGrace) { [self] in
                state.withLock { state in Self.goLive(except: [], &state) }
            }
        } catch {
            channel.close(.tryAgainLater, reason: "database unavailable")
        }
    }

    /// Sends the waiting live events (but those of `replayed` groups, which their replay takes
    /// over) and delivers live from now on.
    private static func goLive(except replayed: Set<UUID>, _ state: inout State) {
        guard let pending = state.pending, state.readySent else { return }
        state.pending = nil
        for (event, frame) in pending where !replayed.contains(event.group) { send(event, frame, &state) }
        for (event, frame) in pending where replayed.contains(event.group) { state.replaying[event.group]?.append((event, frame)) }
    }

    func received(_ message: WebSocketMessage, on channel: WebSocketChannel) {
        guard case .text(let text) = message else { return }
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            channel.send(frame: StreamFrames.error(code: "invalid_json", message: "frames must be JSON objects"))
            return
        }
        guard object["type"] as? String == "resume" else {
            channel.send(frame: StreamFrames.error(code: "unknown_type", message: "the only client frame is {\"type\":\"resume\",\"cursors\":{...}}"))
            return
        }
        guard let raw = object["cursors"] as? [String: Any] else {
            channel.send(frame: StreamFrames.error(code: "validation_failed", message: "resume needs cursors: {\"<group id>\": <last seq seen>}"))
            return
        }
        var cursors: [(UUID, Int64)] = []
        for (key, value) in raw {
            guard let group = UUID(uuidString: key), let seq = value as? Int, seq >= 0 else {
                channel.send(frame: StreamFrames.error(code: "validation_failed", message: "each cursor is a group id and a whole seq ≥ 0"))
                return
            }
            cursors.append((group, Int64(seq)))
        }
        let requested = cursors
        state.withLock { state in
            if state.readySent {
                enqueueResume(requested, on: channel, &state)
            } else {
                state.early.append(requested)
            }
        }
    }

    /// Starts a resume after any still running (they run one at a time, in order).
    private func enqueueResume(_ cursors: [(UUID, Int64)], on channel: WebSocketChannel, _ state: inout State) {
        let previous = state.resumes
        state.resumesQueued += 1
        let number = state.resumesQueued
        state.resumes = Task { [self] in
            await previous?.value
            await resume(cursors, on: channel)
            // The last resume in line lets go of its handle: a finished task's handle keeps the
            // whole task alive (about 1.3 KB, most of an idle stream's memory) for the stream's life.
            self.state.withLock { state in
                if state.resumesQueued == number { state.resumes = nil }
            }
        }
    }

    /// Replays each group from its cursor in bounded pages, waiting for the connection's queue
    /// to drain between pages, then hands the group back to the live flow.
    private func resume(_ cursors: [(UUID, Int64)], on channel: WebSocketChannel) async {
        // Only the user's own groups are replayed; others are named in an error.
        let (cursors, unknown) = state.withLock { state -> ([(UUID, Int64)], [UUID]) in
            var known: [(UUID, Int64)] = []
            var unknown: [UUID] = []
            for (group, cursor) in cursors.sorted(by: { $0.0.uuidString < $1.0.uuidString }) {
                guard state.lastSent[group] != nil else {
                    unknown.append(group)
                    continue
                }
                state.lastSent[group] = cursor
                state.replaying[group] = []
                known.append((group, cursor))
            }
            Self.goLive(except: Set(known.map(\.0)), &state)
            return (known, unknown)
        }
        if !unknown.isEmpty {
            channel.send(frame: StreamFrames.error(
                code: "not_found", message: "not a group of yours: " + unknown.map { $0.uuidString.lowercased() }.joined(separator: ", ")))
        }
        let tenant = tenantID
        for (group, _) in cursors {
            while true {
                if state.withLock({ $0.closed }) { return }
                while await channel.queuedBytes() > queueLimit / 2 {
                    if state.withLock({ $0.closed }) { return }
                    try? await Task.sleep(for: .milliseconds(5))
                }
                let after = state.withLock { $0.lastSent[group] ?? 0 }
                let page: [StreamEvent]
                do {
                    page = try await pool.withConnection { connection in
                        try connection.withTenantTransaction(tenant) {
                            try GroupEventLog().streamEvents(group: group, after: after, limit: Self.replayPage, on: $0)
                        }
                    }
                } catch {
                    channel.close(.tryAgainLater, reason: "database unavailable")
                    return
                }
                state.withLock { state in
                    for event in page { Self.send(event, StreamFrames.event(event), &state) }
                    if page.count < Self.replayPage {
                        for (event, frame) in state.replaying.removeValue(forKey: group) ?? [] { Self.send(event, frame, &state) }
                    }
                }
                if page.count < Self.replayPage { break }
            }
        }
        state.withLock { state in
            let groups = cursors.compactMap { cursor in state.lastSent[cursor.0].map { (cursor.0, $0) } }
            state.channel?.send(frame: StreamFrames.groups(type: "resumed", userID: nil, groups))
        }
    }

    /// Sends an event if it is newer than what this connection has sent of its group.
    private static func send(_ event: StreamEvent, _ frame: [UInt8], _ state: inout State) {
        claim(event, &state)?.send(frame: frame)
    }

    /// The channel to send `event` on if it is newer than what this connection has sent of
    /// its group (which it then counts as sent); nil to drop it.
    private static func claim(_ event: StreamEvent, _ state: inout State) -> WebSocketChannel? {
        guard let channel = state.channel else { return nil }
        if let last = state.lastSent[event.group], event.seq <= last { return nil }
        state.lastSent[event.group] = event.seq
        return channel
    }

    // MARK: - StreamSubscriber

    func deliver(_ event: StreamEvent, frame: [UInt8], into batch: inout FrameBatch) {
        let target = state.withLock { state -> WebSocketChannel? in
            guard !state.closed else { return nil }
            if state.pending != nil {
                state.pending!.append((event, frame))
            } else if state.replaying[event.group] != nil {
                state.replaying[event.group]!.append((event, frame))
            } else {
                // Sent with the rest of the batch, right after every subscriber has decided. Frames
                // this connection queues under the lock (replay, flushes) are queued before this
                // decision or after the batch: a replay needs a database round trip first.
                return Self.claim(event, &state)
            }
            return nil
        }
        if let target { batch.targets.append(target) }
    }

    func removed(from group: UUID, notice: [UInt8]) {
        state.withLock { state in
            state.lastSent.removeValue(forKey: group)
            state.replaying.removeValue(forKey: group)
            state.pending?.removeAll { $0.0.group == group }
            state.channel?.send(frame: notice)
        }
    }

    func notice(_ frame: [UInt8]) {
        state.withLock { $0.channel }?.send(frame: frame)
    }

    func sessionEnded() {
        state.withLock { $0.channel }?.close(.policyViolation, reason: "session ended")
    }

    func closed(code: WebSocketCloseCode?) {
        let resumes = state.withLock { state -> Task<Void, Never>? in
            state.closed = true
            return state.resumes
        }
        resumes?.cancel()
        hub.unsubscribe(self)
    }
}
