import CLibPQ
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A connection that LISTENs, for a reactor to drive: register `socket` for readability in
/// epoll and call `drain()` when it is readable. `drain` never blocks (PQconsumeInput reads only
/// what the socket holds). A connection lost is reported by `drain` throwing; the owner then
/// opens a new listener and catches up from the event log, since notifications sent while
/// nobody listened are gone.
///
/// `@unchecked Sendable`: used by one reactor thread at a time.
public final class PostgresListener: @unchecked Sendable {
    private let connection: PostgresConnection
    public let channel: String

    /// Connects (blocking, bounded by the connect timeout) and LISTENs on `channel`.
    public init(_ configuration: ConnectionConfiguration, channel: String) throws {
        var configuration = configuration
        configuration.applicationName += "-listen"
        connection = try PostgresConnection.connect(configuration)
        self.channel = channel
        try connection.run(script: "LISTEN \"\(channel.replacingOccurrences(of: "\"", with: "\"\""))\"")
        guard PQsetnonblocking(connection.handle, 1) == 0 else {
            throw DatabaseError(.connectionLost, "could not make the LISTEN connection non-blocking")
        }
    }

    /// The descriptor to watch for readability.
    public var socket: Int32 { PQsocket(connection.handle) }

    /// Every notification payload received so far, in arrival order.
    public func drain() throws -> [String] {
        guard PQconsumeInput(connection.handle) == 1, PQstatus(connection.handle) == CONNECTION_OK else {
            throw DatabaseError(.connectionLost, "the LISTEN connection was lost")
        }
        var payloads: [String] = []
        while let notification = PQnotifies(connection.handle) {
            payloads.append(String(cString: notification.pointee.extra))
            PQfreemem(notification)
        }
        return payloads
    }
}
