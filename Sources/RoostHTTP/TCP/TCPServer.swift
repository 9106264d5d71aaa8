import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What a protocol other than HTTP does with one TCP connection of a `TCPServer` (MQTT for
/// bridges). Called on the connection's event loop only, never concurrently.
public protocol TCPSession: AnyObject {
    /// Bytes arrived. They are valid only during the call.
    func received(_ bytes: UnsafeRawBufferPointer)
    /// The connection ended: the peer closed it, it failed, or `close` finished. Called once.
    func ended(byPeer: Bool)
}

/// A TCP listener for another protocol beside HTTP (MQTT for bridges), on the HTTP server's
/// first event loop: its connections are few (one per device), so one loop serves them all.
/// Connections past `maxConnections` are closed on accept; a connection whose peer does not
/// read what it is sent (more than `maxQueuedBytes` waiting) is closed.
public final class TCPServer: Sendable {
    public typealias Open = @Sendable (TCPChannel) -> any TCPSession

    private let http: HTTPServer
    private let address: ListenAddress
    private let maxConnections: Int
    private let maxQueuedBytes: Int
    private let open: Open
    private let listener = Mutex<Int32?>(nil)
    let openConnections = Atomic<Int>(0)
    let refusedConnections = Atomic<Int>(0)

    public init(address: ListenAddress, on http: HTTPServer, maxConnections: Int, maxQueuedBytes: Int = 256 * 1024, open: @escaping Open) {
        (self.address, self.http, self.maxConnections, self.maxQueuedBytes, self.open) = (address, http, maxConnections, maxQueuedBytes, open)
    }

    /// Connections open now, and those refused so far for being past the limit.
    public var connections: (open: Int, refused: Int) {
        (openConnections.load(ordering: .relaxed), refusedConnections.load(ordering: .relaxed))
    }

    /// Binds the address (throwing now for a taken port) and starts accepting on the HTTP
    /// server's first loop, which must be running; the TCP port bound.
    @discardableResult
    public func start() throws -> UInt16? {
        try Socket.requireFree(address)
        let fd = try Socket.listen(address, backlog: 128)
        listener.withLock { $0 = fd }
        http.onFirstLoop { [self] loop in
            do {
                try loop.register(fd, TCPListener(fd: fd, loop: loop, server: self))
            } catch {
                Glibc.close(fd)
            }
        }
        return Socket.boundPort(fd)
    }

    /// Stops accepting and closes every connection at once (their sessions hear `ended`).
    public func stop() {
        guard let fd = listener.withLock({ value -> Int32? in defer { value = nil }; return value }) else { return }
        http.onFirstLoop { loop in
            loop.deregister(fd)
            Glibc.close(fd)
            for connection in loop.handlers(of: TCPConnection.self) { connection.finish(byPeer: false) }
        }
    }

    fileprivate func accepted(_ fd: Int32, peer: String, loop: EventLoop) {
        guard openConnections.load(ordering: .relaxed) < maxConnections else {
            refusedConnections.add(1, ordering: .relaxed)
            Glibc.close(fd)
            return
        }
        openConnections.add(1, ordering: .relaxed)
        let connection = TCPConnection(fd: fd, loop: loop, server: self, maxQueuedBytes: maxQueuedBytes)
        let channel = TCPChannel(connection: connection, loop: loop, peer: peer)
        connection.session = open(channel)
        do {
            try loop.register(fd, connection)
        } catch {
            connection.finish(byPeer: false)
        }
    }
}

private final class TCPListener: EventHandler {
    let fd: Int32
    unowned let loop: EventLoop
    let server: TCPServer

    init(fd: Int32, loop: EventLoop, server: TCPServer) {
        (self.fd, self.loop, self.server) = (fd, loop, server)
    }

    func handleEvent(readable: Bool, writable: Bool) {
        for _ in 0..<64 {
            guard let accepted = try? Socket.accept(fd) else { return }
            server.accepted(accepted.fd, peer: accepted.peer, loop: loop)
        }
    }
}

/// The connection a session writes to. `send`, `close` and `onLoop` may be called from any
/// thread (a handler that waited on the database); the rest only on the loop.
public final class TCPChannel: @unchecked Sendable {
    // `@unchecked Sendable`: `connection` is touched only on `loop`, which every method from
    // another thread hops to.
    private let connection: TCPConnection
    private let loop: EventLoop
    public let peer: String

    init(connection: TCPConnection, loop: EventLoop, peer: String) {
        (self.connection, self.loop, self.peer) = (connection, loop, peer)
    }

    /// Runs `work` on the connection's loop.
    public func onLoop(_ work: @escaping @Sendable () -> Void) {
        loop.execute(work)
    }

    public func send(_ bytes: [UInt8]) {
        loop.execute { [connection] in connection.send(bytes) }
    }

    /// Closes the connection once what was sent before is written.
    public func close() {
        loop.execute { [connection] in connection.closeAfterWrites() }
    }

    /// On the loop: whether to read from the socket (off holds a client back while its
    /// requests wait; TCP's window then slows it down).
    public func setReading(_ reading: Bool) {
        connection.setReading(reading)
    }

    /// On the loop: runs `action` on the loop after `milliseconds`; a token for `cancel`.
    public func after(milliseconds: Int, _ action: @escaping () -> Void) -> UInt64 {
        loop.schedule(afterNanoseconds: UInt64(max(0, milliseconds)) * 1_000_000, action)
    }

    public func cancel(_ timer: UInt64) {
        loop.cancelTimer(timer)
    }

    /// On the loop: the loop's clock, in nanoseconds (a test's manual clock where it has one).
    public var now: UInt64 { loop.clock.now() }
}

/// `@unchecked Sendable`: handed between threads only inside closures that run on its loop,
/// the one thread that touches it.
final class TCPConnection: EventHandler, @unchecked Sendable {
    let fd: Int32
    unowned let loop: EventLoop
    let server: TCPServer
    let maxQueuedBytes: Int
    var session: (any TCPSession)?
    private var outbound: [UInt8] = []
    private var written = 0
    private var reading = true
    private var closing = false
    private var finished = false

    init(fd: Int32, loop: EventLoop, server: TCPServer, maxQueuedBytes: Int) {
        (self.fd, self.loop, self.server, self.maxQueuedBytes) = (fd, loop, server, maxQueuedBytes)
    }

    func handleEvent(readable: Bool, writable: Bool) {
        if writable { flush() }
        guard readable, reading, !finished, !closing else { return }
        for _ in 0..<16 {
            let result: IOResult<Int>
            do {
                result = try loop.readBuffer.read(fd) { bytes in session?.received(bytes) }
            } catch {
                finish(byPeer: true)
                return
            }
            switch result {
            case .wouldBlock: return
            case .done(0):
                finish(byPeer: true)
                return
            case .done: if !reading || finished || closing { return }
            }
        }
    }

    func send(_ bytes: [UInt8]) {
        guard !finished, !closing else { return }
        outbound += bytes
        guard outbound.count - written <= maxQueuedBytes else {
            finish(byPeer: false)
            return
        }
        flush()
    }

    func closeAfterWrites() {
        guard !finished else { return }
        closing = true
        flush()
    }

    func setReading(_ on: Bool) {
        guard !finished, reading != on else { return }
        reading = on
        loop.setInterest(fd, readable: on, writable: written < outbound.count)
        // Bytes may have arrived while reading was off: a level-triggered epoll reports them.
    }

    private func flush() {
        guard !finished else { return }
        while written < outbound.count {
            let result = outbound.withUnsafeBytes { raw in
                try? systemCall("send") { Glibc.send(fd, raw.baseAddress! + written, raw.count - written, Int32(MSG_NOSIGNAL)) }
            }
            switch result {
            case .done(let count)?: written += count
            case .wouldBlock?:
                loop.setInterest(fd, readable: reading, writable: true)
                return
            case nil:
                finish(byPeer: true)
                return
            }
        }
        outbound.removeAll(keepingCapacity: outbound.count <= 64 * 1024)
        written = 0
        loop.setInterest(fd, readable: reading, writable: false)
        if closing { finish(byPeer: false) }
    }

    func finish(byPeer: Bool) {
        guard !finished else { return }
        finished = true
        loop.deregister(fd)
        Glibc.close(fd)
        server.openConnections.subtract(1, ordering: .relaxed)
        let session = self.session
        self.session = nil
        session?.ended(byPeer: byPeer)
    }
}
