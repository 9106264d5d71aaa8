import Foundation
import RoostProtocol
import Synchronization

/// Drives `FanoutState` for one node: feeds it notices, the database's answers and the stream
/// connections' frames, and carries out the actions it returns. Sends, closes and timers are
/// queued on the connections' loops while the state's lock is held, so frames reach each
/// connection in the order the state machine decided them; reads run as tasks and report back.
public final class FanoutHub<Sink: FrameSink>: Sendable {
    private let state: Mutex<FanoutState<Sink>>
    private let reader: any EventLogReader
    private let logPageSize: Int
    private let replayPageSize: Int
    private let liveGraceMilliseconds: Int
    private let queueLimit: Int
    private let onError: @Sendable (String) -> Void
    private let auditor = Mutex<Task<Void, Never>?>(nil)
    private let foundBehind = Atomic<Int>(0)
    private let regressions = Atomic<Int>(0)

    /// - Parameters:
    ///   - logPageSize: events per read when the log is read for live delivery.
    ///   - liveGraceMilliseconds: after `ready`, live delivery starts this late without a client frame.
    ///   - queueLimit: a connection's outbound bound; a replay waits while half of it is used.
    public init(reader: any EventLogReader, state: sending FanoutState<Sink> = FanoutState(), logPageSize: Int = 500,
                liveGraceMilliseconds: Int = 2000, queueLimit: Int = 1 << 20, onError: @escaping @Sendable (String) -> Void = { _ in }) {
        replayPageSize = state.replayPageSize
        self.state = Mutex(state)
        self.reader = reader
        self.logPageSize = logPageSize
        self.liveGraceMilliseconds = liveGraceMilliseconds
        self.queueLimit = queueLimit
        self.onError = onError
    }

    /// Groups the audits found behind their log (a notice lost, or very late), since the start.
    public var groupsFoundBehind: Int { foundBehind.load(ordering: .relaxed) }
    /// Groups whose log was found shorter than what was delivered here (`regressed`).
    public var logRegressions: Int { regressions.load(ordering: .relaxed) }

    /// Subscribed connections and the groups they follow on this node.
    public var counts: (subscribers: Int, groups: Int) { state.withLock { $0.counts } }

    /// Feeds this hub from `source` (the node's LISTEN connection).
    public func listen(to source: any NotificationSource) throws {
        try source.start(received: { [self] in received($0) }, reconnected: { [self] in catchUp() })
    }

    // MARK: - Connections

    /// A stream connection opens: it is registered at once (so it hears its session's end), then
    /// subscribed and told where it stands. Closes it with 1008 when the session has ended, 1013
    /// when the database cannot be read.
    @discardableResult
    public func open(_ sink: Sink, tenant: UUID, user: UUID, session: SessionKey) -> SubscriberID {
        let id = state.withLock { $0.register(sink, tenant: tenant, user: user, session: session) }
        Task { await start(id, sink: sink, tenant: tenant, user: user, sessionHash: session.hex) }
        return id
    }

    private func start(_ id: SubscriberID, sink: Sink, tenant: UUID, user: UUID, sessionHash: String) async {
        do {
            let standing = try await reader.openStream(tenant: tenant, user: user, sessionHash: sessionHash) { [self] groups in
                state.withLock { $0.subscribe(id, to: groups) }
            }
            guard let standing else {
                sink.close(.policyViolation, reason: "session ended")
                return
            }
            let now = Self.now()
            mutate { $0.ready(id, userID: user, standing: standing, now: now) }
        } catch {
            sink.close(.tryAgainLater, reason: "database unavailable")
        }
    }

    /// A `resume` frame from the connection.
    public func resume(_ id: SubscriberID, cursors: [(UUID, Int64)]) {
        let now = Self.now()
        mutate { $0.resume(id, cursors: cursors, now: now) }
    }

    /// The user's open streams on this node (`StreamRoutes` caps them).
    public func streamCount(of user: UUID) -> Int {
        state.withLock { $0.streamCount(of: user) }
    }

    /// The connection closed.
    public func close(_ id: SubscriberID) {
        state.withLock { $0.unsubscribe(id) }
    }

    // MARK: - Notices

    /// Payloads from the LISTEN connection, in arrival order; those that are not notices are dropped.
    public func received(_ payloads: [String]) {
        for payload in payloads {
            guard let notice = NodeNotice(payload: payload) else {
                onError("fanout: ignored a notice that is not one: \(payload.prefix(80))")
                continue
            }
            mutate { $0.received(notice) }
        }
    }

    /// After the LISTEN connection was re-established: every group followed here is caught up.
    public func catchUp() {
        mutate { $0.catchUp() }
    }

    // MARK: - Auditing

    /// Audits the groups followed here every `interval`, until `stopAuditing`: a notice sent
    /// after its commit (`NoticeTiming.afterCommit`) is lost if its node stops between the two,
    /// and its group would otherwise wait for its next event.
    public func startAuditing(every interval: Duration) {
        let task = Task { [self] in
            while !Task.isCancelled {
                await audit(grace: interval)
            }
        }
        auditor.withLock { running in
            running?.cancel()
            running = task
        }
    }

    public func stopAuditing() {
        auditor.withLock { running in
            running?.cancel()
            running = nil
        }
    }

    /// Groups asked about in one read of an audit: a node following more reads them in pages.
    static var auditPageSize: Int { 2000 }

    /// One audit: reads where each followed group stands (all tenants' in one statement a page
    /// of `auditPageSize`), waits `grace` (time for any notice of those events still on its
    /// way), then reads every group still behind that from its log. A read that fails leaves its
    /// page for the next audit.
    public func audit(grace: Duration) async {
        let followed = state.withLock { $0.auditedGroups() }
        var standing: [(tenant: UUID, group: UUID, lastSeq: Int64)] = []
        for start in stride(from: 0, to: followed.count, by: Self.auditPageSize) {
            let page = followed[start..<min(start + Self.auditPageSize, followed.count)].map { (tenant: $0.tenant, group: $0.group) }
            do {
                standing += try await reader.standings(of: page)
            } catch {
                onError("fanout: auditing \(page.count) group(s) failed: \(error)")
            }
        }
        // A log that ends below what was delivered here before it was read has lost events (a
        // lossy failover): its streams are told to reset. (A log only grows otherwise, so this
        // cannot be a read that merely raced newer events.)
        let deliveredBefore = Dictionary(followed.map { ($0.group, $0.delivered) }, uniquingKeysWith: { first, _ in first })
        for (tenant, group, lastSeq) in standing {
            guard let delivered = deliveredBefore[group], lastSeq < delivered else { continue }
            mutate { $0.regressed(group, tenant: tenant, to: lastSeq) }
            regressions.add(1, ordering: .relaxed)
            onError("fanout: group \(group.lowercasedText)'s log ends at seq \(lastSeq), below seq \(delivered) delivered here "
                    + "(events lost in a failover?); its streams here were told to reset and get the events that now hold those seqs")
        }
        try? await Task.sleep(for: grace)
        guard !Task.isCancelled else { return }
        let behind = state.withLock { state in
            let (actions, behind) = state.audited(standing)
            for action in actions { perform(action) }
            return behind
        }
        if !behind.isEmpty { foundBehind.add(behind.count, ordering: .relaxed) }
        for (group, by) in behind {
            onError("fanout: group \(group.lowercasedText) was still \(by) event(s) behind its log after the audit's wait (a notice lost, or late); reading it")
        }
    }

    // MARK: - Carrying out actions

    private func mutate(_ body: (inout FanoutState<Sink>) -> [FanoutAction<Sink>]) {
        state.withLock { state in
            for action in body(&state) { perform(action) }
        }
    }

    /// Runs under the state's lock: everything here returns at once.
    private func perform(_ action: FanoutAction<Sink>) {
        switch action {
        case .send(let frame, let sinks):
            if sinks.count == 1 { sinks[0].send(frame: frame) } else { Sink.send(frame: frame, to: sinks) }
        case .close(let sink, let code, let reason):
            sink.close(code, reason: reason)
        case .scheduleGoLive(let id, let sink):
            sink.schedule(afterMilliseconds: liveGraceMilliseconds) { [self] in mutate { $0.goLive(id) } }
        case .readLog(let group, let tenant, let after, let through, let attempt):
            Task { await readLog(group, tenant: tenant, after: after, through: through, attempt: attempt) }
        case .readReplay(let read, let sink):
            Task { await readReplay(read, sink: sink) }
        }
    }

    private func readLog(_ group: UUID, tenant: UUID, after: Int64, through: Int64?, attempt: Int) async {
        if attempt > 1 {
            // The database is away: try again, more slowly, while anyone still follows the group.
            try? await Task.sleep(for: .milliseconds(min(2000, 50 << min(attempt - 1, 6))))
        }
        do {
            let page = try await reader.events(tenant: tenant, group: group, after: after, through: through, limit: logPageSize)
            mutate { $0.logRead(group, after: after, page) }
        } catch {
            onError("fanout: reading group \(group.lowercasedText) failed: \(error)")
            mutate { $0.logReadFailed(group, attempt: attempt) }
        }
    }

    private func readReplay(_ read: ReplayRead, sink: Sink) async {
        // Bounded pages, each only once the connection's queue has room: a replay never
        // overruns the bound that closes a slow reader.
        while await sink.queuedBytes() > queueLimit / 2 {
            guard state.withLock({ $0.isSubscribed(read.subscriber) }) else { return }
            try? await Task.sleep(for: .milliseconds(5))
        }
        guard state.withLock({ $0.isSubscribed(read.subscriber) }) else { return }
        do {
            let page = try await reader.replayPage(read, limit: replayPageSize)
            mutate { $0.replayRead(read, page) }
        } catch {
            mutate { $0.replayFailed(read) }
        }
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
