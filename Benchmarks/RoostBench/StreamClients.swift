import CLinuxEvents
import Foundation
import RoostProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Many `/v1/stream` connections on one epoll loop in one thread (no thread per connection):
/// each upgrades with its session token, sends an empty `resume` so live delivery starts at
/// once, and reports every `message.created` whose text carries a post marker (`bench:<n>:`).
final class StreamClients: @unchecked Sendable {
    // `@unchecked Sendable`: connection state is touched only by the loop thread; other threads
    // read the atomics and call `stop`.
    private enum Phase { case connecting, handshaking, open, closed }

    private struct Connection {
        var fd: Int32 = -1
        var phase = Phase.connecting
        var head: [UInt8] = []
        var reader = WebSocketReader(role: .client, maxMessageBytes: 1 << 20)
        let token: String
    }

    private var connections: [Connection]
    private let port: UInt16
    private let epollFD: Int32
    private let onDelivery: (Int, Int, UInt64) -> Void
    let live = Atomic<Int>(0)
    let closed = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private var thread: Thread?
    /// One receive buffer for the loop, not one per read (zeroing 64 KiB per frame would cost
    /// the client more than the server spends sending it).
    private var buffer = [UInt8](repeating: 0, count: 65_536)
    private let finished = DispatchSemaphore(value: 0)

    /// `onDelivery(connection, post, receivedAt)` runs on the loop thread.
    init(port: UInt16, tokens: [String], onDelivery: @escaping (Int, Int, UInt64) -> Void) {
        self.port = port
        connections = tokens.map { Connection(token: $0) }
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        self.onDelivery = onDelivery
    }

    /// Starts the loop and opens every connection, at most `inFlight` handshakes at a time.
    func start(inFlight: Int = 256) {
        let thread = Thread { [self] in run(inFlight: inFlight) }
        thread.stackSize = 1 << 22
        thread.start()
        self.thread = thread
    }

    /// Waits until all are live (or `timeout`); the number live.
    func awaitLive(timeout: Double) -> Int {
        let deadline = now() + UInt64(timeout * 1e9)
        while live.load(ordering: .relaxed) + closed.load(ordering: .relaxed) < connections.count && now() < deadline {
            usleep(10_000)
        }
        return live.load(ordering: .relaxed)
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }

    private func run(inFlight: Int) {
        var next = 0
        var pendingHandshakes = 0
        var events = [epoll_event](repeating: epoll_event(), count: 512)
        while !stopping.load(ordering: .relaxed) {
            while next < connections.count && pendingHandshakes < inFlight {
                open(next)
                next += 1
                pendingHandshakes += 1
            }
            let count = epoll_wait(epollFD, &events, Int32(events.count), 20)
            if count <= 0 { continue }
            for index in 0..<Int(count) {
                let id = Int(events[index].data.u64)
                let before = connections[id].phase
                handle(id, writable: events[index].events & UInt32(EPOLLOUT.rawValue) != 0)
                let after = connections[id].phase
                if (before == .connecting || before == .handshaking) && (after == .open || after == .closed) { pendingHandshakes -= 1 }
            }
        }
        for id in connections.indices where connections[id].fd >= 0 { Glibc.close(connections[id].fd) }
        Glibc.close(epollFD)
        finished.signal()
    }

    private func open(_ id: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        connections[id].fd = fd
        var event = epoll_event()
        event.events = UInt32(EPOLLIN.rawValue) | UInt32(EPOLLOUT.rawValue)
        event.data.u64 = UInt64(id)
        epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event)
    }

    private func write(_ id: Int, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(connections[id].fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    private func fail(_ id: Int) {
        guard connections[id].phase != .closed else { return }
        if connections[id].phase == .open { live.subtract(1, ordering: .relaxed) }
        connections[id].phase = .closed
        closed.add(1, ordering: .relaxed)
        epoll_ctl(epollFD, EPOLL_CTL_DEL, connections[id].fd, nil)
        Glibc.close(connections[id].fd)
        connections[id].fd = -1
    }

    private func handle(_ id: Int, writable: Bool) {
        if connections[id].phase == .connecting && writable {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(connections[id].fd, SOL_SOCKET, SO_ERROR, &error, &length)
            guard error == 0 else { return fail(id) }
            write(id, Array(("GET /v1/stream HTTP/1.1\r\nHost: bench\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                + "Authorization: Bearer \(connections[id].token)\r\n\r\n").utf8))
            connections[id].phase = .handshaking
            var event = epoll_event()
            event.events = UInt32(EPOLLIN.rawValue)
            event.data.u64 = UInt64(id)
            epoll_ctl(epollFD, EPOLL_CTL_MOD, connections[id].fd, &event)
            return
        }
        while connections[id].phase == .handshaking || connections[id].phase == .open {
            let fd = connections[id].fd
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { return fail(id) }
            if count < 0 { return }
            var bytes = Array(buffer[0..<count])
            if connections[id].phase == .handshaking {
                connections[id].head += bytes
                guard let end = Self.headerEnd(connections[id].head) else { continue }
                guard connections[id].head.starts(with: Array("HTTP/1.1 101".utf8)) else { return fail(id) }
                bytes = Array(connections[id].head[(end + 4)...])
                connections[id].head = []
                connections[id].phase = .open
                live.add(1, ordering: .relaxed)
                write(id, WebSocketFrameEncoder.text(#"{"type":"resume","cursors":{}}"#, maskKey: UInt32.random(in: 1...UInt32.max)))
            }
            connections[id].reader.feed(bytes)
            readFrames(id)
        }
    }

    private func readFrames(_ id: Int) {
        while true {
            switch connections[id].reader.next() {
            case .needMore: return
            case .failure: return fail(id)
            case .message(let message):
                switch message {
                case .text(let text):
                    if let post = Self.marker(text) { onDelivery(id, post, now()) }
                case .ping(let payload):
                    var frame: [UInt8] = []
                    WebSocketFrameEncoder.encode(.pong, payload: payload, maskKey: 0x1234_5678, into: &frame)
                    write(id, frame)
                case .close:
                    return fail(id)
                default:
                    break
                }
            }
        }
    }

    /// The post number in `bench:<n>:` inside a `message.created` event, if any.
    static func marker(_ text: String) -> Int? {
        guard let range = text.range(of: "bench:"), text.contains("\"message.created\"") else { return nil }
        var value = 0
        for character in text[range.upperBound...].utf8 {
            guard character >= 48 && character <= 57 else { break }
            value = value * 10 + Int(character - 48)
        }
        return value
    }

    static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}
