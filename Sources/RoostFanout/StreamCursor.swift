import Foundation

/// Where one stream connection stands in each group of its user (API.md "The stream"): which
/// groups it may receive at all, the highest seq it has sent of each, and what waits while a
/// group is replayed. A pure value: its owner feeds it live events, replay pages, removals and
/// joins, and sends exactly the frames it returns, in order.
///
/// Authorization lives here as well as exactly-once delivery: a group absent from `groups` is
/// one the user is not in, and nothing of it is ever returned, neither live nor from a replay
/// page read before the removal was known. A join makes a group known again from its
/// `member.joined` event on.
public struct StreamCursor<Frame> {
    enum Standing {
        /// Live: events above `last` are sent as they come.
        case live(last: Int64)
        /// Being replayed by the replay `token` from `last`: pages are sent, live events wait in
        /// `held`. `seen` is how far the connection had got before (its standing, or what was
        /// sent live), which the replay may start below.
        /// Out of line (`indirect`): an idle stream's standing is `live`, 9 bytes, not 33.
        indirect case replaying(last: Int64, seen: Int64, token: Int, held: [(seq: Int64, frame: Frame)])

        var last: Int64 {
            switch self {
            case .live(let last), .replaying(let last, _, _, _): last
            }
        }

        /// The highest seq the connection has accounted for: sent, covered by `ready`, or held.
        var seen: Int64 {
            switch self {
            case .live(let last): last
            case .replaying(let last, let seen, _, let held): max(last, seen, held.last?.seq ?? 0)
            }
        }
    }

    /// One group's standing inline, more in a dictionary (`SmallMap`).
    private var groups: SmallMap<UUID, Standing>
    /// The last replay's token; here, in what would be the padding after `groups` (fields keep
    /// their order), and 32 bits (20 resumes in 10 s, the most a connection may make, would
    /// take 34 years to use them up).
    private var nextToken: Int32 = 0
    /// Groups the connection stopped following, with how far it had accounted for them: a join
    /// at or below that mark is one it has already seen or had covered, not a new one.
    private var left: [UUID: Int64] = [:]
    /// Until live delivery starts (the client's first frame, or a grace period after `ready`),
    /// live events wait here; nil once live.
    private var waiting: [(group: UUID, seq: Int64, frame: Frame)]? = []

    /// A connection whose `ready` covered each group through its `last_seq`.
    public init(standing: [(group: UUID, lastSeq: Int64)]) {
        groups = SmallMap(standing.lazy.map { ($0.group, Standing.live(last: $0.lastSeq)) })
    }

    /// Whether the connection may receive `group`'s events now.
    public func follows(_ group: UUID) -> Bool { groups[group] != nil }

    /// The highest seq sent (or covered) of each group, for `resumed`.
    public func standing(of selected: [UUID]) -> [(UUID, Int64)] {
        selected.compactMap { group in groups[group].map { (group, $0.last) } }
    }

    // MARK: - Live

    /// A live event from the hub (each group's in seq order): the frame to send now, or nil
    /// when it waits (not live yet, or its group is being replayed) or is dropped (already
    /// sent, or a group the user is not in).
    public mutating func live(_ group: UUID, seq: Int64, frame: Frame) -> Frame? {
        sendsLive(group, seq: seq, frame: frame) ? frame : nil
    }

    /// `live` as the fanout's hot loop asks it, once per subscriber of every event: whether the
    /// frame is to be sent now. One lookup of the group, and the frame is not handed back.
    public mutating func sendsLive(_ group: UUID, seq: Int64, frame: Frame) -> Bool {
        if waiting != nil {
            guard let standing = groups[group], seq > standing.last else { return false }
            waiting!.append((group, seq, frame))
            return false
        }
        return groups.update(group) { standing in
            guard seq > standing.last else { return false }
            switch standing {
            case .live:
                standing = .live(last: seq)
                return true
            case .replaying(let last, let seen, let token, var held):
                // Taken out first, so `held` is the list's only owner and grows in place.
                standing = .live(last: last)
                held.append((seq, frame))
                standing = .replaying(last: last, seen: seen, token: token, held: held)
                return false
            }
        } ?? false
    }

    /// Live delivery starts: the waiting events go out, but those of groups being replayed,
    /// which wait for their replay to finish.
    public mutating func goLive() -> [Frame] {
        guard let pending = waiting else { return [] }
        waiting = nil
        var out: [Frame] = []
        for event in pending {
            if let frame = live(event.group, seq: event.seq, frame: event.frame) { out.append(frame) }
        }
        return out
    }

    // MARK: - Replay

    /// A resume begins: each known group is replayed from its cursor (so events already sent
    /// may repeat, in order), unknown groups are named back, and live delivery starts for the
    /// rest. The token identifies this replay's pages.
    public mutating func beginReplay(_ cursors: [(group: UUID, after: Int64)]) -> (accepted: [(UUID, Int64)], unknown: [UUID], token: Int, frames: [Frame]) {
        nextToken &+= 1
        let token = Int(nextToken)
        var accepted: [(UUID, Int64)] = []
        var unknown: [UUID] = []
        for (group, cursor) in cursors {
            guard let standing = groups[group] else {
                unknown.append(group)
                continue
            }
            // Live events held by an earlier replay of the group stay held: this replay reads past them.
            var held: [(seq: Int64, frame: Frame)] = []
            if case .replaying(_, _, _, let earlier) = standing { held = earlier }
            groups[group] = .replaying(last: cursor, seen: standing.seen, token: token, held: held)
            accepted.append((group, cursor))
        }
        return (accepted, unknown, token, goLive())
    }

    /// Where replay `token` of `group` reads its next page from, or nil when that replay is
    /// over for the group (the user left it, or another replay took it over).
    public func replayPosition(_ group: UUID, token: Int) -> Int64? {
        guard case .replaying(let last, _, let current, _)? = groups[group], current == token else { return nil }
        return last
    }

    /// A page of `group`'s log read for replay `token`, in seq order: the frames to send. With
    /// `complete` (the log has nothing more), the group goes live again and the live events
    /// held meanwhile follow, those newer than the page.
    public mutating func replayed(_ group: UUID, token: Int, page: [(seq: Int64, frame: Frame)], complete: Bool) -> [Frame] {
        guard case .replaying(var last, let seen, let current, let held)? = groups[group], current == token else { return [] }
        var out: [Frame] = []
        for event in page where event.seq > last {
            out.append(event.frame)
            last = event.seq
        }
        guard complete else {
            groups[group] = .replaying(last: last, seen: seen, token: token, held: held)
            return out
        }
        for event in held where event.seq > last {
            out.append(event.frame)
            last = event.seq
        }
        groups[group] = .live(last: last)
        return out
    }

    /// Replay `token` of `group` found everything through `seq` purged: it goes on from there.
    /// False when that replay is over for the group, or already past `seq`.
    public mutating func replaySkipped(_ group: UUID, token: Int, to seq: Int64) -> Bool {
        guard case .replaying(let last, let seen, let current, let held)? = groups[group], current == token, last < seq else { return false }
        groups[group] = .replaying(last: seq, seen: seen, token: token, held: held)
        return true
    }

    /// Replay `token` read `group` and found the user no longer in it: the group ends here, unless
    /// the hub has meanwhile made it live again (a join after the removal the read saw).
    public mutating func replayFoundGone(_ group: UUID, token: Int) {
        guard replayPosition(group, token: token) != nil else { return }
        removed(group)
    }

    /// `group`'s log was found to end at `seq`, below what this connection had (a lossy failover
    /// gave those seqs to other events): it goes back to `seq`, so the events that now hold the
    /// seqs after it are sent, and what waited above it is dropped. True when it had more.
    @discardableResult
    public mutating func rewound(_ group: UUID, to seq: Int64) -> Bool {
        guard let standing = groups[group], standing.seen > seq else { return false }
        waiting?.removeAll { $0.group == group && $0.seq > seq }
        switch standing {
        case .live(let last):
            groups[group] = .live(last: min(last, seq))
        case .replaying(let last, let seen, let token, let held):
            groups[group] = .replaying(last: min(last, seq), seen: min(seen, seq), token: token, held: held.filter { $0.seq <= seq })
        }
        return true
    }

    // MARK: - Membership

    /// The user is no longer in `group` (removed or left at the event `seq`, the group deleted,
    /// or a replay found them gone: `seq` nil): nothing more of it is sent, live or replayed.
    /// True when the group was followed. A removal the connection has already accounted for
    /// (its `ready` came after a re-join, or it has sent events past `seq`) is stale and changes
    /// nothing.
    @discardableResult
    public mutating func removed(_ group: UUID, at seq: Int64? = nil) -> Bool {
        guard let standing = groups[group] else { return false }
        if let seq, hasAccounted(group, through: seq) { return false }
        waiting?.removeAll { $0.group == group }
        groups.removeValue(forKey: group)
        left[group] = max(standing.seen, seq ?? 0)
        return true
    }

    /// Whether the connection follows `group` and has accounted for its events through `seq`
    /// (sent them, held them, or had them covered by `ready`): a membership event there is old news.
    public func hasAccounted(_ group: UUID, through seq: Int64) -> Bool {
        guard let standing = groups[group] else { return false }
        return seq <= standing.seen
    }

    /// The user joined `group`: its events from `seq` (the `member.joined` event) on are theirs.
    /// Nothing changes for a group already followed (a join its `ready` covered), nor for a join
    /// older than what the connection had of a group it has since left.
    public mutating func joined(_ group: UUID, at seq: Int64) {
        guard groups[group] == nil, seq > left[group] ?? 0 else { return }
        left[group] = nil
        groups[group] = .live(last: seq - 1)
    }
}
