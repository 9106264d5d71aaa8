import Foundation
import RoostFanout
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// The node's fanout, over its WebSocket connections.
typealias StreamHub = FanoutHub<WebSocketChannel>

/// A stream connection is where the fanout's frames go.
extension WebSocketChannel: FrameSink {}

/// What the fanout reads, from PostgreSQL: every read in the stream's tenant.
struct PostgresEventLog: EventLogReader {
    let pool: ConnectionPool

    func openStream(tenant: UUID, user: UUID, sessionHash: String, subscribe: @escaping @Sendable ([UUID]) -> Void) async throws
        -> [(group: UUID, lastSeq: Int64)]?
    {
        // One transaction: at READ COMMITTED each statement sees what was committed before it
        // began, so the standing read after `subscribe` covers every event whose notice could
        // have come before the subscription.
        try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant) { connection -> [(group: UUID, lastSeq: Int64)]? in
                subscribe(try GroupStore().subscriptions(of: user, on: connection).map(\.group))
                // The session is checked after subscribing: its end may have been announced
                // before this stream was subscribed to hear it.
                guard try UserStore().sessionIsActive(tokenHashHex: sessionHash, on: connection) else { return nil }
                return try GroupStore().subscriptions(of: user, on: connection)
            }
        }
    }

    func events(tenant: UUID, group: UUID, after: Int64, through: Int64?, limit: Int) async throws -> [StreamEvent] {
        try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant) {
                try GroupEventLog().streamEvents(group: group, after: after, through: through, limit: limit, on: $0)
            }
        }
    }

    func standings(of groups: [(tenant: UUID, group: UUID)]) async throws -> [(tenant: UUID, group: UUID, lastSeq: Int64)] {
        try await pool.withConnection { try GroupStore().standings(of: groups, on: $0) }
    }

    /// REPEATABLE READ: a page is never read past a removal or a sign-out the checks did not see.
    func replayPage(_ read: ReplayRead, limit: Int) async throws -> ReplayPage {
        try await pool.withConnection { connection in
            try connection.withTenantTransaction(read.tenant, isolation: .repeatableRead) { connection in
                guard try UserStore().sessionIsActive(tokenHashHex: read.session.hex, on: connection) else { return .sessionEnded }
                guard try GroupStore().mayFollow(read.group, user: read.user, on: connection) else { return .notMember }
                // Read for the stream's user: what is hidden from them is not in the page (nor
                // counted in its length, which ends a replay when short).
                try connection.setViewer(read.user)
                switch try GroupEventLog().resumeEvents(group: read.group, after: read.after, limit: limit, on: connection) {
                case .events(let events): return .events(events)
                case .expired(let oldest): return .expired(oldestSeq: oldest)
                }
            }
        }
    }
}

extension StreamHub {
    /// How often `roost serve` audits the groups its streams follow: a chat line whose notice
    /// was lost reaches them within two of these.
    static let auditInterval: Duration = .seconds(2)

    /// The hub `roost serve` runs, reading from `pool`.
    static func make(pool: ConnectionPool, queueLimit: Int, liveGraceMilliseconds: Int = 2000, log: Log? = nil) -> StreamHub {
        StreamHub(reader: PostgresEventLog(pool: pool), liveGraceMilliseconds: liveGraceMilliseconds, queueLimit: queueLimit,
                  onError: { message in log?.warning(message) })
    }
}
