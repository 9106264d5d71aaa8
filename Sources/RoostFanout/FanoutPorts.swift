import Foundation
import RoostProtocol

/// A stream connection, as the fanout writes to it (RoostServer makes the WebSocket connection
/// one). Every method returns at once: sending queues bytes on the connection's own loop.
public protocol FrameSink: Sendable {
    func send(frame: [UInt8])
    /// One frame for many connections, queued on each in the order given (an implementation
    /// makes one hop per thread involved, not one per connection).
    static func send(frame: [UInt8], to sinks: [Self])
    func close(_ code: WebSocketCloseCode, reason: String)
    /// Bytes queued and not yet written (0 once closed): a replay waits for this to fall.
    func queuedBytes() async -> Int
    /// Runs `action` after `milliseconds`, on the connection's timers.
    func schedule(afterMilliseconds milliseconds: Int, _ action: @escaping @Sendable () -> Void)
}

/// What the fanout reads from the database (RoostServer implements it over RoostPersistence).
public protocol EventLogReader: Sendable {
    /// A stream's opening read, in one transaction: the user's groups, handed to `subscribe`
    /// before their standing (`last_seq`) is read, so no event committed after that read can be
    /// missed; nil when the session has ended.
    func openStream(tenant: UUID, user: UUID, sessionHash: String, subscribe: @escaping @Sendable ([UUID]) -> Void) async throws
        -> [(group: UUID, lastSeq: Int64)]?
    /// `group`'s events after `after` (through `through`, or to its end), oldest first.
    func events(tenant: UUID, group: UUID, after: Int64, through: Int64?, limit: Int) async throws -> [StreamEvent]
    /// Where each of `groups` stands (its `last_seq`), whatever their tenants, in one read: for
    /// the fanout's audit, which asks every node's groups every few seconds.
    func standings(of groups: [(tenant: UUID, group: UUID)]) async throws -> [(tenant: UUID, group: UUID, lastSeq: Int64)]
    /// One replay page, read in one snapshot with the checks that the user is still in the group
    /// and still signed in.
    func replayPage(_ read: ReplayRead, limit: Int) async throws -> ReplayPage
}

/// Where notices from the nodes come from (RoostServer's LISTEN connection on an event loop).
public protocol NotificationSource: Sendable {
    /// Starts handing payloads to `received`, in arrival order; `reconnected` is called when
    /// payloads may have been lost (the connection was re-established).
    func start(received: @escaping @Sendable ([String]) -> Void, reconnected: @escaping @Sendable () -> Void) throws
    func stop()
}
