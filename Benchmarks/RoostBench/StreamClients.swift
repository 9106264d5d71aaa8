import CLinuxEvents
import Foundation
import RoostProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Many subscriber connections on one epoll loop in one thread (no thread per connection):
/// Roost streams, MQTT subscriptions to mosquitto, XMPP room occupants of ejabberd or Matrix
/// `/sync` long-polls to Synapse, reporting each delivery that carries a post marker (`bench:<n>:`).
///
/// A Roost stream upgrades `/v1/stream` with its session token and sends its `resume` frame
/// (by default `{}`, so live delivery starts at once); it is live at `101` and counted as
/// resumed at the `resumed` frame. An MQTT client sends CONNECT and SUBSCRIBE together and is
/// live (and resumed) at its SUBACK. An XMPP client opens its stream, authenticates (SASL PLAIN),
/// binds and joins its room with no history; it is live at the room's presence for itself. A
/// Matrix client (already joined to its room) sends its first `/sync`; it is live at the answer
/// and long-polls from then on, each request sent as the last one's answer arrives.
final class StreamClients: @unchecked Sendable {
    // `@unchecked Sendable`: connection state is touched only by the loop thread; other threads
    // read the atomics and call `stop`.
    enum Kind {
        /// Session tokens, and each connection's resume frame.
        case roost(tokens: [String], resume: @Sendable (Int) -> String)
        /// Each connection's topic.
        case mqtt(topics: [String])
        /// Each connection's user and room (`users[i]` joins `rooms[i]` under its own name).
        case xmpp(domain: String, users: [String], rooms: [String])
        /// Each connection's access token.
        case matrix(tokens: [String])
    }

    /// `waiting`: refused or dropped before it was live, and due to reconnect (`retryLimit`).
    private enum Phase { case connecting, handshaking, open, waiting, closed }

    private struct Connection {
        var fd: Int32 = -1
        var phase = Phase.connecting
        var head: [UInt8] = []
        var reader = WebSocketReader(role: .client, maxMessageBytes: 1 << 20)
        var mqtt = MQTT.Reader()
        var xmpp = XMPP.Splitter()
        /// The next of `XMPP.milestones` an opening XMPP session waits for.
        var xmppStep = 0
        var http = HTTPResponseReader()
        var attempts = 0
        var resumed = false
    }

    private let kind: Kind
    private var connections: [Connection]
    private let port: UInt16
    private let source: String?
    private let epollFD: Int32
    private let onDelivery: (Int, Int, UInt64, Int) -> Void
    private let needle: [UInt8]
    let live = Atomic<Int>(0)
    let resumed = Atomic<Int>(0)
    let closed = Atomic<Int>(0)
    /// Why connections failed: the socket error of a failed connect (last seen), and counts.
    let connectFailures = Atomic<Int>(0), lastConnectError = Atomic<Int>(0), refusals = Atomic<Int>(0)
    /// Reads that returned data, and those the kernel stamped with their arrival time.
    private let reads = Atomic<Int>(0), stampedReads = Atomic<Int>(0)
    var readStamps: (reads: Int, stamped: Int) { (reads.load(ordering: .relaxed), stampedReads.load(ordering: .relaxed)) }
    /// Reconnects after a refusal (503), a close before `resumed` (1013 while the database is
    /// busy) or a failed connect, as a real client does, up to `retryLimit` times a connection
    /// with growing delays; 0 (the default) fails at once. Set before `start`.
    var retryLimit = 0
    let retries = Atomic<Int>(0)
    /// Connections waiting to reconnect, with when (loop thread only).
    private var reconnects: [(due: UInt64, id: Int)] = []
    private let stopping = Atomic<Bool>(false)
    private var buffer = [UInt8](repeating: 0, count: 65_536)  // one receive buffer for the loop
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC, read once: kernel receive stamps are wall-clock time.
    private let wallMinusMonotonic: UInt64 = {
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        return UInt64(wall.tv_sec) * 1_000_000_000 + UInt64(wall.tv_nsec) &- now()
    }()
    private let finished = DispatchSemaphore(value: 0)

    var count: Int { connections.count }

    /// `onDelivery(connection, post, receivedAt, frameBytes)` runs on the loop thread.
    /// `source` binds each connection to that local address (127.0.0.x: another set of
    /// ephemeral ports).
    /// `needle` precedes the number a frame is counted by (a post's `bench:<n>` by default).
    init(port: UInt16, kind: Kind, source: String? = nil, needle: String = "bench:", onDelivery: @escaping (Int, Int, UInt64, Int) -> Void) {
        self.needle = Array(needle.utf8)
        self.port = port
        self.kind = kind
        self.source = source
        switch kind {
        case .roost(let tokens, _): connections = tokens.map { _ in Connection() }
        case .mqtt(let topics): connections = topics.map { _ in Connection() }
        case .xmpp(_, let users, _): connections = users.map { _ in Connection() }
        case .matrix(let tokens): connections = tokens.map { _ in Connection() }
        }
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        self.onDelivery = onDelivery
    }

    /// Starts the loop and opens every connection, at most `inFlight` handshakes at a time.
    func start(inFlight: Int = 256) {
        let thread = Thread { [self] in run(inFlight: inFlight) }
        thread.stackSize = 1 << 22
        thread.start()
    }

    /// Waits until every connection is live, resumed or closed (or `timeout`); the number live.
    func awaitLive(timeout: Double, resumed wantResumed: Bool = false) -> Int {
        let deadline = now() + UInt64(timeout * 1e9)
        func ready() -> Int { wantResumed ? resumed.load(ordering: .relaxed) : live.load(ordering: .relaxed) }
        while ready() + closed.load(ordering: .relaxed) < connections.count && now() < deadline {
            usleep(2_000)
        }
        return live.load(ordering: .relaxed)
    }

    /// Closes every connection and stops the loop.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }

    private func run(inFlight: Int) {
        var next = 0
        var pendingHandshakes = 0
        var events = [epoll_event](repeating: epoll_event(), count: 512)
        while !stopping.load(ordering: .relaxed) {
            let current = now()
            while let index = reconnects.firstIndex(where: { $0.due <= current }), pendingHandshakes < inFlight {
                open(reconnects.remove(at: index).id)
                pendingHandshakes += 1
            }
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
                if (before == .connecting || before == .handshaking) && (after == .open || after == .closed || after == .waiting) {
                    pendingHandshakes -= 1
                }
            }
        }
        for id in connections.indices where connections[id].fd >= 0 { Glibc.close(connections[id].fd) }
        Glibc.close(epollFD)
        finished.signal()
    }

    private func open(_ id: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        // Each read carries the time the kernel received its data, so a frame that waited in
        // the socket buffer while the loop read others is timed when it arrived.
        var timestamps: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &timestamps, socklen_t(MemoryLayout<Int32>.size))
        if let source {
            // The port is chosen at connect (IP_BIND_ADDRESS_NO_PORT), so ports still in
            // TIME_WAIT from an earlier run do not exhaust the range at bind.
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_IP), 24 /* IP_BIND_ADDRESS_NO_PORT */, &one, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            _ = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        connections[id].fd = fd
        connections[id].phase = .connecting
        connections[id].head = []
        connections[id].reader = WebSocketReader(role: .client, maxMessageBytes: 1 << 20)
        connections[id].mqtt = MQTT.Reader()
        connections[id].xmpp = XMPP.Splitter()
        connections[id].xmppStep = 0
        connections[id].http = HTTPResponseReader()
        var event = epoll_event()
        event.events = UInt32(EPOLLIN.rawValue) | UInt32(EPOLLOUT.rawValue)
        event.data.u64 = UInt64(id)
        epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event)
    }

    private func write(_ id: Int, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(connections[id].fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    private func fail(_ id: Int) {
        guard connections[id].phase != .closed && connections[id].phase != .waiting else { return }
        if connections[id].phase == .open { live.subtract(1, ordering: .relaxed) }
        epoll_ctl(epollFD, EPOLL_CTL_DEL, connections[id].fd, nil)
        Glibc.close(connections[id].fd)
        connections[id].fd = -1
        if !connections[id].resumed && connections[id].attempts < retryLimit && !stopping.load(ordering: .relaxed) {
            connections[id].attempts += 1
            connections[id].phase = .waiting
            retries.add(1, ordering: .relaxed)
            // 100 ms, doubling to 1.6 s, plus up to 100 ms of jitter so retries do not return in step.
            let delay = UInt64(100_000_000) << UInt64(min(connections[id].attempts - 1, 4)) + UInt64.random(in: 0..<100_000_000)
            reconnects.append((now() + delay, id))
            return
        }
        connections[id].phase = .closed
        closed.add(1, ordering: .relaxed)
    }

    /// The request that opens connection `id` once TCP is up.
    private func opening(_ id: Int) -> [UInt8] {
        switch kind {
        case .roost(let tokens, _):
            return Array(("GET /v1/stream HTTP/1.1\r\nHost: bench\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                + "Authorization: Bearer \(tokens[id])\r\n\r\n").utf8)
        case .mqtt(let topics):
            return MQTT.connect(clientID: "bench-\(getpid())-\(id)") + MQTT.subscribe(topics[id])
        case .xmpp(let domain, _, _):
            return XMPP.header(domain: domain)
        case .matrix(let tokens):
            return Matrix.sync(token: tokens[id], since: nil)
        }
    }

    private func handle(_ id: Int, writable: Bool) {
        if connections[id].phase == .connecting && writable {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(connections[id].fd, SOL_SOCKET, SO_ERROR, &error, &length)
            guard error == 0 else {
                connectFailures.add(1, ordering: .relaxed)
                lastConnectError.store(Int(error), ordering: .relaxed)
                return fail(id)
            }
            write(id, opening(id))
            connections[id].phase = .handshaking
            var event = epoll_event()
            event.events = UInt32(EPOLLIN.rawValue)
            event.data.u64 = UInt64(id)
            epoll_ctl(epollFD, EPOLL_CTL_MOD, connections[id].fd, &event)
            return
        }
        while connections[id].phase == .handshaking || connections[id].phase == .open {
            let (count, arrival) = receive(connections[id].fd)
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { return fail(id) }
            if count < 0 { return }
            let bytes = Array(buffer[0..<count])
            switch kind {
            case .roost(_, let resume): receiveRoost(id, bytes, arrival: arrival, resume: resume)
            case .mqtt: receiveMQTT(id, bytes, arrival: arrival)
            case .xmpp(let domain, let users, let rooms): receiveXMPP(id, bytes, arrival: arrival, user: users[id], room: rooms[id], domain: domain)
            case .matrix(let tokens): receiveMatrix(id, bytes, arrival: arrival, token: tokens[id])
            }
        }
    }

    /// One `recvmsg` into the loop's buffer: the byte count (or -1) and when the kernel received
    /// the data (`SCM_TIMESTAMPNS`, wall clock, turned into `now()`'s monotonic clock), or the
    /// time of the read when the kernel gave none.
    private func receive(_ fd: Int32) -> (Int, UInt64) {
        var control = [UInt64](repeating: 0, count: 8)  // room for one cmsghdr and a timespec, 8-aligned
        var stamp: timespec?
        let count = buffer.withUnsafeMutableBytes { data -> Int in
            control.withUnsafeMutableBytes { controlBytes -> Int in
                var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer -> Int in
                    var message = msghdr()
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    message.msg_control = controlBytes.baseAddress
                    message.msg_controllen = controlBytes.count
                    let count = recvmsg(fd, &message, 0)
                    // The first control message: {cmsg_len: size_t, cmsg_level: Int32, cmsg_type: Int32}, then its data.
                    let headerSize = MemoryLayout<Int>.size + 2 * MemoryLayout<Int32>.size
                    if count > 0, message.msg_controllen >= headerSize + MemoryLayout<timespec>.size {
                        let level = controlBytes.load(fromByteOffset: MemoryLayout<Int>.size, as: Int32.self)
                        let type = controlBytes.load(fromByteOffset: MemoryLayout<Int>.size + 4, as: Int32.self)
                        if level == SOL_SOCKET, type == SO_TIMESTAMPNS {
                            stamp = controlBytes.loadUnaligned(fromByteOffset: headerSize, as: timespec.self)
                        }
                    }
                    return count
                }
            }
        }
        if count > 0 { reads.add(1, ordering: .relaxed) }
        guard let stamp else { return (count, now()) }
        stampedReads.add(1, ordering: .relaxed)
        let wall = UInt64(stamp.tv_sec) * 1_000_000_000 + UInt64(stamp.tv_nsec)
        return (count, wall &- wallMinusMonotonic)
    }

    private func receiveRoost(_ id: Int, _ received: [UInt8], arrival: UInt64, resume: (Int) -> String) {
        var bytes = received
        if connections[id].phase == .handshaking {
            connections[id].head += bytes
            guard let end = firstIndex(of: Array("\r\n\r\n".utf8), in: connections[id].head) else { return }
            guard connections[id].head.starts(with: Array("HTTP/1.1 101".utf8)) else {
                refusals.add(1, ordering: .relaxed)
                return fail(id)
            }
            bytes = Array(connections[id].head[(end + 4)...])
            connections[id].head = []
            connections[id].phase = .open
            live.add(1, ordering: .relaxed)
            write(id, WebSocketFrameEncoder.text(resume(id), maskKey: UInt32.random(in: 1...UInt32.max)))
        }
        connections[id].reader.feed(bytes)
        while true {
            switch connections[id].reader.next() {
            case .needMore: return
            case .failure: return fail(id)
            case .message(let message):
                switch message {
                case .text(let text):
                    if let post = Self.marker(text.utf8, needle: needle) {
                        onDelivery(id, post, arrival, text.utf8.count)
                    } else if text.hasPrefix(#"{"type":"resumed""#), !connections[id].resumed {
                        connections[id].resumed = true
                        resumed.add(1, ordering: .relaxed)
                    }
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

    /// Live and resumed in one step (MQTT's SUBACK, XMPP's own room presence, Matrix's first
    /// `/sync` answer): these protocols have no history to catch up on first.
    private func openResumed(_ id: Int) {
        connections[id].phase = .open
        connections[id].resumed = true
        live.add(1, ordering: .relaxed)
        resumed.add(1, ordering: .relaxed)
    }

    private func receiveMQTT(_ id: Int, _ bytes: [UInt8], arrival: UInt64) {
        connections[id].mqtt.feed(bytes)
        while let (type, body) = connections[id].mqtt.next() {
            switch type {
            case MQTT.suback:
                guard connections[id].phase == .handshaking else { continue }
                openResumed(id)
            case MQTT.publish:
                let payload = MQTT.payload(ofPublish: body)
                if let post = Self.marker(payload, needle: needle) { onDelivery(id, post, arrival, payload.count) }
            case MQTT.connack where body.count == 2 && body[body.startIndex + 1] != 0:
                return fail(id)  // connection refused
            default:
                break
            }
        }
    }

    private func receiveXMPP(_ id: Int, _ received: [UInt8], arrival: UInt64, user: String, room: String, domain: String) {
        var bytes = received
        while connections[id].phase == .handshaking {
            connections[id].head += bytes
            let step = connections[id].xmppStep
            guard let index = firstIndex(of: XMPP.milestones[step], in: connections[id].head) else {
                if XMPP.refusals.contains(where: { firstIndex(of: $0, in: connections[id].head) != nil }) {
                    refusals.add(1, ordering: .relaxed)
                    return fail(id)
                }
                return
            }
            bytes = Array(connections[id].head[(index + XMPP.milestones[step].count)...])
            connections[id].head = []
            if step == XMPP.milestones.count - 1 {
                openResumed(id)
            } else {
                write(id, XMPP.afterMilestone(step, user: user, room: room, domain: domain))
                connections[id].xmppStep += 1
            }
        }
        connections[id].xmpp.feed(bytes) { stanza in
            if let post = Self.marker(stanza, needle: needle) { onDelivery(id, post, arrival, stanza.count) }
        }
    }

    private func receiveMatrix(_ id: Int, _ bytes: [UInt8], arrival: UInt64, token: String) {
        connections[id].http.feed(bytes)
        while let (status, body) = connections[id].http.next() {
            guard status == 200, let since = Matrix.nextBatch(in: body) else {
                refusals.add(1, ordering: .relaxed)
                return fail(id)
            }
            if connections[id].phase == .handshaking {
                openResumed(id)
            } else {
                // One answer carries every message since the last: each is a delivery.
                var posts: [Int] = []
                Self.scanMarkers(body, needle: needle) { posts.append($0); return true }
                for post in posts { onDelivery(id, post, arrival, body.count / posts.count) }
            }
            write(id, Matrix.sync(token: token, since: since))
        }
    }

    /// The whole number after each `needle` in `bytes`, in order, given to `found` until it
    /// returns false.
    static func scanMarkers<Bytes: Collection>(_ bytes: Bytes, needle: [UInt8], _ found: (Int) -> Bool) where Bytes.Element == UInt8 {
        var matched = 0
        var value: Int?
        for byte in bytes {
            if matched == needle.count {
                if byte >= 48 && byte <= 57 {
                    value = (value ?? 0) * 10 + Int(byte - 48)
                    continue
                }
                if let number = value, !found(number) { return }
                (matched, value) = (0, nil)
            }
            if byte == needle[matched] {
                matched += 1
            } else {
                matched = byte == needle[0] ? 1 : 0
            }
        }
        if let value { _ = found(value) }
    }

    /// The whole number after the first `needle` in a delivered frame or payload, if any.
    static func marker<Bytes: Collection>(_ bytes: Bytes, needle: [UInt8]) -> Int? where Bytes.Element == UInt8 {
        var first: Int?
        scanMarkers(bytes, needle: needle) { first = $0; return false }
        return first
    }
}
