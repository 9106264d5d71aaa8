import Dispatch
import Foundation
import RoostHTTP
import RoostFanout
import RoostPersistence

/// The node's LISTEN connection, the fanout's `NotificationSource`, driven by an event loop: its
/// socket sits in the loop's epoll set and readability drains notifications to the fanout.
/// Connecting happens off the loop (it blocks). When the connection is lost, the listener
/// reconnects with backoff and then reports `reconnected`, and the fanout catches every group up
/// from the log, since notifications sent while nobody listened are gone.
///
/// `@unchecked Sendable`: `listener` is touched only on the loop thread; reconnection runs on
/// `connectQueue` and hands the new connection to the loop.
final class FanoutListener: EventHandler, NotificationSource, @unchecked Sendable {
    private let configuration: ConnectionConfiguration
    private let server: HTTPServer
    private let log: Log
    private var received: @Sendable ([String]) -> Void = { _ in }
    private var reconnected: @Sendable () -> Void = {}
    private var loop: EventLoop?
    private var listener: PostgresListener?
    /// The descriptor registered for `listener`: libpq reports -1 once the connection is lost,
    /// so it is remembered to take it out of epoll before libpq closes it.
    private var registered: Int32 = -1
    private var stopped = false
    private let connectQueue = DispatchQueue(label: "roost.fanout.listen")

    init(configuration: ConnectionConfiguration, server: HTTPServer, log: Log) {
        self.configuration = configuration
        self.server = server
        self.log = log
    }

    /// Connects now (at start-up, blocking) and attaches to the server's first loop.
    func start(received: @escaping @Sendable ([String]) -> Void, reconnected: @escaping @Sendable () -> Void) throws {
        self.received = received
        self.reconnected = reconnected
        let first = try PostgresListener(configuration, channel: GroupEventLog.channel)
        server.onFirstLoop { [self] loop in
            self.loop = loop
            attach(first)
        }
    }

    func stop() {
        loop?.execute { [self] in
            stopped = true
            detach()
        }
    }

    private func attach(_ listener: PostgresListener) {
        guard let loop, !stopped else { return }
        do {
            registered = listener.socket
            try loop.register(registered, self)
            self.listener = listener
        } catch {
            log.error("fanout: cannot watch the LISTEN connection", ["error": "\(error)"])
            reconnect(attempt: 1)
        }
    }

    private func detach() {
        guard listener != nil, let loop else { return }
        loop.deregister(registered)
        registered = -1
        listener = nil  // libpq closes the socket, now out of epoll
    }

    func handleEvent(readable: Bool, writable: Bool) {
        guard let listener else { return }
        do {
            let payloads = try listener.drain()
            if !payloads.isEmpty { received(payloads) }
        } catch {
            log.warning("fanout: the LISTEN connection was lost; reconnecting", ["error": "\(error)"])
            detach()
            reconnect(attempt: 1)
        }
    }

    /// Tries again off the loop, waiting longer each time (up to 2 s); on success the hub
    /// catches up every group it serves.
    private func reconnect(attempt: Int) {
        guard !stopped else { return }
        let configuration = self.configuration
        let delay = Backoff(base: 0.05, cap: 2).seconds(afterFailures: attempt)
        connectQueue.asyncAfter(deadline: .now() + delay) { [self] in
            do {
                let fresh = try PostgresListener(configuration, channel: GroupEventLog.channel)
                loop?.execute { [self] in
                    attach(fresh)
                    log.info("fanout: listening again; catching up", ["attempts": String(attempt)])
                    reconnected()
                }
            } catch {
                if attempt == 1 || attempt % 10 == 0 {
                    log.warning("fanout: still cannot LISTEN", ["attempts": String(attempt), "error": "\(error)"])
                }
                loop?.execute { [self] in reconnect(attempt: attempt + 1) }
            }
        }
    }
}
