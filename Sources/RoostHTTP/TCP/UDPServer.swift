import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where a datagram came from, to answer it.
public struct UDPPeer: Sendable, Hashable {
    fileprivate let storage: [UInt8]
    /// The sender's address as text (no port): what per-address limits count by.
    public let address: String
}

/// A UDP listener beside HTTP (DC-09 alarm panels), on the HTTP server's first event loop:
/// each datagram is handed to `received` whole (up to `maxDatagramBytes`; a longer one is
/// cut there, and the handler sees it was), and answers go back with `send(_:to:)`.
public final class UDPServer: Sendable {
    public typealias Received = @Sendable (_ datagram: [UInt8], _ truncated: Bool, _ peer: UDPPeer) -> Void

    private let http: HTTPServer
    private let address: ListenAddress
    private let maxDatagramBytes: Int
    private let received: Received
    private let socket = Mutex<Int32?>(nil)
    private let loop = Mutex<EventLoop?>(nil)

    public init(address: ListenAddress, on http: HTTPServer, maxDatagramBytes: Int = 2048, received: @escaping Received) {
        (self.address, self.http, self.maxDatagramBytes, self.received) = (address, http, maxDatagramBytes, received)
    }

    /// Binds the address (throwing now for a taken port) and starts reading on the HTTP
    /// server's first loop; the UDP port bound.
    @discardableResult
    public func start() throws -> UInt16? {
        let fd = try Socket.bindUDP(address)
        socket.withLock { $0 = fd }
        http.onFirstLoop { [self] loop in
            self.loop.withLock { $0 = loop }
            do {
                try loop.register(fd, UDPReader(fd: fd, maxDatagramBytes: maxDatagramBytes, received: received))
            } catch {
                Glibc.close(fd)
            }
        }
        return Socket.boundPort(fd)
    }

    public func stop() {
        guard let fd = socket.withLock({ value -> Int32? in defer { value = nil }; return value }) else { return }
        http.onFirstLoop { loop in
            loop.deregister(fd)
            Glibc.close(fd)
        }
    }

    /// Sends one datagram to `peer`, from any thread. A datagram the kernel cannot take now
    /// (its buffer full) is dropped, as UDP may: the sender sends again.
    public func send(_ bytes: [UInt8], to peer: UDPPeer) {
        guard let loop = loop.withLock({ $0 }) else { return }
        loop.execute { [self] in
            guard let fd = socket.withLock({ $0 }) else { return }
            peer.storage.withUnsafeBytes { address in
                bytes.withUnsafeBytes { payload in
                    _ = Glibc.sendto(fd, payload.baseAddress, payload.count, Int32(MSG_DONTWAIT),
                                     address.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(address.count))
                }
            }
        }
    }
}

private final class UDPReader: EventHandler {
    let fd: Int32
    let received: UDPServer.Received
    var buffer: [UInt8]

    init(fd: Int32, maxDatagramBytes: Int, received: @escaping UDPServer.Received) {
        (self.fd, self.received) = (fd, received)
        buffer = [UInt8](repeating: 0, count: maxDatagramBytes + 1)
    }

    /// Reads what is waiting, 64 datagrams at most a turn so other connections of the loop get theirs.
    func handleEvent(readable: Bool, writable: Bool) {
        guard readable else { return }
        for _ in 0..<64 {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT), $0, &length) }
                }
            }
            guard count >= 0 else { return }  // EAGAIN: nothing more; another error: the next datagram
            let address = withUnsafeBytes(of: &storage) { Array($0.prefix(Int(length))) }
            let truncated = count == buffer.count
            received(Array(buffer[0..<min(count, buffer.count - 1)]), truncated, UDPPeer(storage: address, address: Socket.peerDescription(storage)))
        }
    }
}
