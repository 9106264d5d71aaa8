import Foundation
import RoostFanout
import RoostPersistence
import RoostProtocol
import Synchronization

/// One `GET /v1/stream` connection (API.md "The stream"): `ready` first, then live events of
/// the user's groups; a `resume` replays each named group from its cursor and joins it to the
/// live flow without a gap or a duplicate.
///
/// What may be sent, and when, is `StreamCursor`'s decision (exactly once per group, nothing of
/// a group the user is not in); this class carries it out: it reads replay pages, checking the
/// membership and the session in the same snapshot as each page, and sends frames in the order
/// the cursor returns them.
///
/// Live delivery starts with the client's first frame (normally its `resume`) or `liveGrace`
/// after `ready`, whichever comes first; until then live events wait. A resume of a group that
/// has gone live since replays from the cursor again, so events the client already had on this
/// connection may repeat (in order); clients drop seqs at or below their cursor.
///
/// Resumes are bounded: one replay runs at a time, a newer `resume` replaces one still waiting,
/// and a client sending more than `resumeLimit` within `resumeWindow` gets an `error` frame and
/// a 1008 close.
final class StreamSession: WebSocketSession, StreamSubscriber {
    /// What the hub said before `ready` (the stream subscribes first, then reads where it stands).
    enum EarlyInput {
        case live(UUID, Int64, [UInt8])
        case removed(UUID)
        case joined(UUID, Int64)
    }

    struct State {
        var channel: WebSocketChannel?
        /// nil until `ready` went out.
        var cursor: StreamCursor<[UInt8]>?
        var early: [EarlyInput] = []
        var closed = false
        /// The replay running now, and the resume waiting for it (a newer one replaces it).
        var replay: Task<Void, Never>?
        var queued: [(UUID, Int64)]?
        var resumeWindowStart = ContinuousClock.now
        var resumesInWindow = 0
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
    static let resumeLimit = 20
    static let resumeWindow = Duration.seconds(10)

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
                var cursor = StreamCursor<[UInt8]>(standing: standing.map { (group: $0.0, lastSeq: $0.1) })
                for input in state.early {
                    switch input {
                    case .live(let group, let seq, let frame): _ = cursor.live(group, seq: seq, frame: frame)
                    case .removed(let group): cursor.removed(group)
                    case .joined(let group, let seq): cursor.joined(group, at: seq)
                    }
                }
                state.early = []
                state.cursor = cursor
                channel.send(frame: StreamFrames.groups(type: "ready", userID: user, standing))
                if let cursors = state.queued {
                    state.queued = nil
                    startReplay(cursors, on: channel, &state)
                }
            }
            channel.schedule(afterMilliseconds: liveGrace) { [self] in
                state.withLock { state in
                    guard let channel = state.channel else { return }
                    for frame in state.cursor?.goLive() ?? [] { channel.send(frame: frame) }
                }
            }
        } catch {
            channel.close(.tryAgainLater, reason: "database unavailable")
        }
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
        let requested = cursors.sorted { $0.0.uuidString < $1.0.uuidString }
        let now = ContinuousClock.now
        state.withLock { state in
            if now - state.resumeWindowStart > Self.resumeWindow {
                state.resumeWindowStart = now
                state.resumesInWindow = 0
            }
            state.resumesInWindow += 1
            guard state.resumesInWindow <= Self.resumeLimit else {
                channel.send(frame: StreamFrames.error(code: "rate_limited",
                                                       message: "more than \(Self.resumeLimit) resumes in \(Self.resumeWindow.components.seconds) s"))
                channel.close(.policyViolation, reason: "too many resumes")
                return
            }
            // One replay at a time; a resume waiting for it is replaced by this newer one.
            if state.cursor == nil || state.replay != nil {
                state.queued = requested
            } else {
                startReplay(requested, on: channel, &state)
            }
        }
    }

    /// Starts replaying `cursors` (under the state lock): live delivery starts for the groups not
    /// replayed, unknown groups are named in an error, and a task reads the pages.
    private func startReplay(_ cursors: [(UUID, Int64)], on channel: WebSocketChannel, _ state: inout State) {
        guard state.cursor != nil, !state.closed else { return }
        let begun = state.cursor!.beginReplay(cursors.map { (group: $0.0, after: $0.1) })
        for frame in begun.frames { channel.send(frame: frame) }
        if !begun.unknown.isEmpty {
            channel.send(frame: StreamFrames.error(
                code: "not_found", message: "not a group of yours: " + begun.unknown.map { $0.uuidString.lowercased() }.joined(separator: ", ")))
        }
        let groups = begun.accepted.map(\.0)
        state.replay = Task { [self] in
            await replay(groups, token: begun.token, on: channel)
            self.state.withLock { state in
                guard !state.closed else { return }
                channel.send(frame: StreamFrames.groups(type: "resumed", userID: nil, state.cursor?.standing(of: groups) ?? []))
                // The finished task's handle is dropped: kept, it would hold the whole task for the stream's life.
                state.replay = nil
                if let next = state.queued {
                    state.queued = nil
                    startReplay(next, on: channel, &state)
                }
            }
        }
    }

    /// Replays each group in bounded pages, waiting for the connection's queue to drain between
    /// pages, until the cursor hands it back to the live flow or ends it (the user left).
    private func replay(_ groups: [UUID], token: Int, on channel: WebSocketChannel) async {
        for group in groups {
            while true {
                if state.withLock({ $0.closed }) { return }
                while await channel.queuedBytes() > queueLimit / 2 {
                    if state.withLock({ $0.closed }) { return }
                    try? await Task.sleep(for: .milliseconds(5))
                }
                guard let after = state.withLock({ $0.cursor?.replayPosition(group, token: token) }) else { break }
                let page: ReplayPage
                do {
                    page = try await read(group, after: after)
                } catch {
                    channel.close(.tryAgainLater, reason: "database unavailable")
                    return
                }
                let complete = state.withLock { state -> Bool in
                    guard !state.closed, state.cursor != nil else { return true }
                    switch page {
                    case .sessionEnded:
                        state.channel?.close(.policyViolation, reason: "session ended")
                        return true
                    case .notMember:
                        state.cursor!.replayFoundGone(group, token: token)
                        return true
                    case .events(let events):
                        let complete = events.count < Self.replayPage
                        let frames = state.cursor!.replayed(group, token: token, page: events.map { (seq: $0.seq, frame: StreamFrames.event($0)) },
                                                            complete: complete)
                        for frame in frames { state.channel?.send(frame: frame) }
                        return complete
                    }
                }
                if complete { break }
            }
        }
    }

    enum ReplayPage {
        case events([StreamEvent])
        case notMember
        case sessionEnded
    }

    /// One page of a group's log, read in the same snapshot as the checks that the user is still
    /// in the group and still signed in (REPEATABLE READ): a page is never read past a removal
    /// or a sign-out that the checks did not see.
    private func read(_ group: UUID, after: Int64) async throws -> ReplayPage {
        let (tenant, user, hash) = (tenantID, userID, sessionHash)
        return try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant, isolation: .repeatableRead) { connection in
                guard try UserStore().sessionIsActive(tokenHashHex: hash, on: connection) else { return .sessionEnded }
                guard try GroupStore().role(of: user, in: group, on: connection) != nil else { return .notMember }
                return .events(try GroupEventLog().streamEvents(group: group, after: after, limit: Self.replayPage, on: connection))
            }
        }
    }

    // MARK: - StreamSubscriber

    func deliver(_ event: StreamEvent, frame: [UInt8], into batch: inout FrameBatch) {
        let target = state.withLock { state -> WebSocketChannel? in
            guard !state.closed, let channel = state.channel else { return nil }
            guard state.cursor != nil else {
                state.early.append(.live(event.group, event.seq, frame))
                return nil
            }
            // Sent with the rest of the batch, right after every subscriber has decided. Frames
            // this connection queues under the lock (replay, flushes) are queued before this
            // decision or after the batch: a replay needs a database round trip first.
            return state.cursor!.live(event.group, seq: event.seq, frame: frame) != nil ? channel : nil
        }
        if let target { batch.targets.append(target) }
    }

    func joined(_ group: UUID, at seq: Int64) {
        state.withLock { state in
            guard state.cursor != nil else {
                state.early.append(.joined(group, seq))
                return
            }
            state.cursor!.joined(group, at: seq)
        }
    }

    func removed(from group: UUID, notice: [UInt8]) {
        state.withLock { state in
            if state.cursor == nil {
                state.early.append(.removed(group))
            } else {
                state.cursor!.removed(group)
            }
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
        let replay = state.withLock { state -> Task<Void, Never>? in
            state.closed = true
            state.queued = nil
            return state.replay
        }
        replay?.cancel()
        hub.unsubscribe(self)
    }
}
