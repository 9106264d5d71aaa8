import Foundation
import RoostProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The HTTP/1.1 server: one event loop per thread, each with its own SO_REUSEPORT listening
/// socket per TCP address so the kernel spreads connections (a Unix socket is served by the
/// first loop). Handlers run off the loops; see `HTTPConnection`.
public final class HTTPServer: Sendable {
    private let context: ServerContext
    private let loops: [EventLoop]
    private let addresses: [ListenAddress]
    private let state = Mutex<(listeners: [(loop: Int, fd: Int32)], threads: [Thread], ports: [UInt16])>(([], [], []))
    private let finished = Mutex<[CheckedContinuation<Void, Never>]>([])
    private let stoppedLoops = Atomic<Int>(0)
    private let accept: Listener.Accept
    /// Whether other processes may listen on the same TCP ports (SO_REUSEPORT across processes,
    /// `--reuse-port`); otherwise a port another process holds is an error at `start`.
    private let sharedWithOtherProcesses: Bool

    /// `errorMapper` turns errors of the application's own kinds into API errors (anything it
    /// leaves is a logged 500); `clock` is what every deadline and timer reads (a test's
    /// `ManualClock` moves it on instead of waiting); `observers` are told of every answered
    /// request after the metrics and the access log.
    public convenience init(
        router: Router, limits: NetworkLimits, addresses: [ListenAddress], threads: Int, log: Log, accessLog: Bool = true,
        observers: [any RequestObserver] = [], errorMapper: @escaping ErrorMapper = { _ in nil }, clock: any LoopClock = SystemClock(),
        sharedWithOtherProcesses: Bool = false
    ) throws {
        try self.init(router: router, limits: limits, addresses: addresses, threads: threads, log: log, accessLog: accessLog,
                      observers: observers, errorMapper: errorMapper, clock: clock, accept: Socket.accept,
                      sharedWithOtherProcesses: sharedWithOtherProcesses)
    }

    /// `accept` is how listeners take a connection (tests inject failures such as EMFILE).
    init(router: Router, limits: NetworkLimits, addresses: [ListenAddress], threads: Int, log: Log, accessLog: Bool,
         observers: [any RequestObserver] = [], errorMapper: @escaping ErrorMapper = { _ in nil }, clock: any LoopClock = SystemClock(),
         accept: @escaping Listener.Accept, sharedWithOtherProcesses: Bool = false) throws {
        context = ServerContext(router: router, limits: limits, log: log, accessLog: accessLog, observers: observers, errorMapper: errorMapper)
        self.addresses = addresses
        self.accept = accept
        self.sharedWithOtherProcesses = sharedWithOtherProcesses
        loops = try (0..<max(1, threads)).map { try EventLoop(index: $0, clock: clock, orderedBudget: limits.framesPerLoopTurn) }
    }

    /// The TCP ports bound, in address order (port 0 in an address picks a free one).
    public var boundPorts: [UInt16] { state.withLock { $0.ports } }

    public var openConnections: Int { context.openConnections.load(ordering: .relaxed) }
    public var requestsServed: Int { context.requestsServed.load(ordering: .relaxed) }
    /// Bytes written from outbound queues so far: all of HTTP's, and the WebSocket frames that
    /// had to wait. A pending write that makes progress raises it.
    public var bytesWritten: Int { context.bytesWritten.load(ordering: .relaxed) }
    public var runningHandlers: Int { context.runningHandlers.load(ordering: .relaxed) }
    /// Bytes waiting in the connections' outbound queues (`roost_outbound_queued_bytes`).
    public var queuedBytes: Int { context.metrics.queuedBytes.load(ordering: .relaxed) }

    /// The `/metrics` body.
    public func renderMetrics(pool: (open: Int, inUse: Int, waiting: Int)) -> String {
        context.metrics.render(pool: pool, runningHandlers: runningHandlers, runningUploads: context.runningUploads.load(ordering: .relaxed))
    }

    /// Runs `work` on the first event loop (to register another descriptor with it).
    package func onFirstLoop(_ work: @escaping @Sendable (EventLoop) -> Void) {
        let loop = loops[0]
        loop.execute { work(loop) }
    }

    /// Binds every address and starts the loop threads.
    public func start() throws {
        var listeners: [(Int, Int32)] = []
        var ports: [UInt16] = []
        do {
            for address in addresses {
                if !sharedWithOtherProcesses, let port = address.port, port != 0 { try Socket.requireFree(address) }
                var port: UInt16?
                for loop in loops where loop.index == 0 || address.sharesAcrossSockets {
                    // Every loop binds the port the first one got, so port 0 works too.
                    var concrete = address
                    if case .inet(let host, 0) = address, let port { concrete = .inet(host: host, port: port) }
                    if case .inet6(let host, 0) = address, let port { concrete = .inet6(host: host, port: port) }
                    let fd = try Socket.listen(concrete)
                    listeners.append((loop.index, fd))
                    if port == nil { port = Socket.boundPort(fd) }
                }
                if let port { ports.append(port) }
            }
        } catch {
            for (_, fd) in listeners { Glibc.close(fd) }
            throw error
        }
        var threads: [Thread] = []
        for loop in loops {
            let mine = listeners.filter { $0.0 == loop.index }.map(\.1)
            let (context, accept) = (self.context, self.accept)
            loop.execute {
                for fd in mine {
                    do {
                        try loop.register(fd, Listener(fd: fd, loop: loop, context: context, accept: accept))
                    } catch {
                        context.log.error("cannot watch a listening socket", ["error": "\(error)"])
                    }
                }
            }
            let metrics = context.metrics
            let thread = Thread { [self] in
                loop.run { metrics.recordLoopIteration(nanoseconds: $0) }
                loopEnded()
            }
            thread.name = "roost-loop-\(loop.index)"
            thread.stackSize = 1 << 20
            threads.append(thread)
            thread.start()
        }
        state.withLock { $0 = (listeners.map { (loop: $0.0, fd: $0.1) }, threads, ports) }
    }

    /// Stops accepting, lets requests in flight finish (up to the grace period), closes idle
    /// connections, and returns when every loop has stopped.
    public func shutdown() async {
        context.shuttingDown.store(true, ordering: .relaxed)
        let listeners = state.withLock { $0.listeners }
        for loop in loops {
            let mine = listeners.filter { $0.loop == loop.index }.map(\.fd)
            loop.execute {
                for fd in mine {
                    loop.deregister(fd)
                    Glibc.close(fd)
                }
                Listener.closeAllGracefully(on: loop)
            }
        }
        let grace = UInt64(context.limits.shutdownGraceMilliseconds) * 1_000_000
        let start = EventLoop.monotonicNow()
        while context.openConnections.load(ordering: .relaxed) > 0 && EventLoop.monotonicNow() - start < grace {
            try? await Task.sleep(for: .milliseconds(20))  // throws only if cancelled: then stop waiting sooner
        }
        for loop in loops {
            loop.execute { Listener.closeAllNow(on: loop) }
            loop.stop()
        }
        await withCheckedContinuation { continuation in
            let done = finished.withLock { waiting -> Bool in
                if stoppedLoops.load(ordering: .relaxed) == loops.count { return true }
                waiting.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func loopEnded() {
        let count = stoppedLoops.add(1, ordering: .relaxed).newValue
        guard count == loops.count else { return }
        let waiting = finished.withLock { waiting in
            defer { waiting = [] }
            return waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}

/// Accepts connections on one listening socket and keeps the loop's connection table.
final class Listener: EventHandler {
    /// Takes one pending connection: nil when none is waiting.
    typealias Accept = @Sendable (Int32) throws(SystemError) -> (fd: Int32, peer: String)?

    let fd: Int32
    private unowned let loop: EventLoop
    private let context: ServerContext
    private let accept: Accept
    /// Accept failures since the last warning, and when that warning was logged.
    private var unreportedFailures = 0
    private var lastWarning: UInt64 = 0

    /// How long accepting pauses after running out of descriptors or memory.
    static let pauseNanoseconds: UInt64 = 100_000_000

    init(fd: Int32, loop: EventLoop, context: ServerContext, accept: @escaping Accept) {
        self.fd = fd
        self.loop = loop
        self.context = context
        self.accept = accept
    }

    func handleEvent(readable: Bool, writable: Bool) {
        // A bounded batch per wake-up keeps one busy listener from starving the loop.
        for _ in 0..<64 {
            let accepted: (fd: Int32, peer: String)?
            do {
                accepted = try accept(fd)
            } catch {
                acceptFailed(error)
                return
            }
            guard let (client, peer) = accepted else { return }
            let count = context.openConnections.add(1, ordering: .relaxed).newValue
            if count > context.limits.maxConnections || context.shuttingDown.load(ordering: .relaxed) || !context.admit(peer) {
                refuse(client)
                context.openConnections.subtract(1, ordering: .relaxed)
                continue
            }
            context.metrics.httpConnections.add(1, ordering: .relaxed)
            // The loop's registration keeps the connection alive until it closes, when it tells
            // the context (`ServerContext.closed`).
            let connection = HTTPConnection(fd: client, peer: peer, loop: loop, context: context)
            do {
                try connection.start()
            } catch {
                connection.close()
            }
        }
    }

    /// Out of descriptors (EMFILE, ENFILE) or kernel memory: the pending connection stays in the
    /// backlog and the socket stays readable, so retrying at once would spin the loop. Accepting
    /// pauses briefly instead (connections that close meanwhile free descriptors), and the
    /// warning is logged at most every 10 s with the number of failures it stands for.
    private func acceptFailed(_ error: SystemError) {
        context.metrics.acceptPauses.add(1, ordering: .relaxed)
        unreportedFailures += 1
        let now = loop.clock.now()
        if lastWarning == 0 || now - lastWarning >= 10_000_000_000 {
            context.log.warning("accept failed; pausing new connections for 100 ms", [
                "error": "\(error)", "failures": String(unreportedFailures),
                "open_connections": String(context.openConnections.load(ordering: .relaxed)),
            ])
            unreportedFailures = 0
            lastWarning = now
        }
        loop.setInterest(fd, readable: false, writable: false)
        let fd = self.fd
        _ = loop.schedule(afterNanoseconds: Self.pauseNanoseconds) { [weak self, unowned loop] in
            guard let self, loop.isRegistered(fd, to: self) else { return }
            loop.setInterest(fd, readable: true, writable: false)
        }
    }

    /// Over the connection limit: a 503 in the API's shape, written once, then close.
    private func refuse(_ client: Int32) {
        var bytes: [UInt8] = []
        let error = APIError(.serviceUnavailable, code: .unavailable, message: "the server has too many connections; try again shortly", headers: ["Retry-After": "1"])
        HTTPResponseWriter.write(HTTPResponse(error), keepAlive: false, date: context.httpDate, into: &bytes)
        _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        Glibc.close(client)
    }

    static func closeAllGracefully(on loop: EventLoop) {
        for connection in loop.handlers(of: HTTPConnection.self) { connection.closeGracefully() }
    }

    static func closeAllNow(on loop: EventLoop) {
        for connection in loop.handlers(of: HTTPConnection.self) { connection.close() }
    }
}
