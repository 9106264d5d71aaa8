import CLinuxEvents
#if canImport(Glibc)
import Glibc
#endif

/// Socket set-up and I/O on raw descriptors, each call through `systemCall`.
enum Socket {
    /// A non-blocking listening socket bound to `address`. TCP sockets set SO_REUSEPORT so
    /// every event loop can listen on the same port (and, with `--reuse-port`, other processes:
    /// `requireFree` keeps them out otherwise).
    static func listen(_ address: ListenAddress, backlog: Int32 = 4096) throws -> Int32 {
        let family: Int32
        switch address {
        case .inet: family = AF_INET
        case .inet6: family = AF_INET6
        case .unix: family = AF_UNIX
        }
        let fd = try mustSucceed("socket", { Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) })
        do {
            switch address {
            case .inet, .inet6:
                try bindTCP(fd, address, sharingPort: true)
            case .unix(let path):
                unlink(path)  // a stale socket file from an earlier run
                var addr = sockaddr_un()
                addr.sun_family = sa_family_t(AF_UNIX)
                withUnsafeMutableBytes(of: &addr.sun_path) { raw in
                    let bytes = Array(path.utf8)
                    raw.copyBytes(from: bytes.prefix(raw.count - 1))
                }
                try bind(fd, &addr, address)
            }
            try mustSucceed("listen \(address)", { Glibc.listen(fd, backlog) })
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// A non-blocking UDP socket bound to an IP `address` (no SO_REUSEPORT: a second process on
    /// the port is refused by bind).
    static func bindUDP(_ address: ListenAddress) throws -> Int32 {
        let family: Int32
        switch address {
        case .inet: family = AF_INET
        case .inet6: family = AF_INET6
        case .unix: throw SystemError(call: "bind \(address)", errno: EAFNOSUPPORT)
        }
        let fd = try mustSucceed("socket", { Glibc.socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) })
        do {
            try bindTCP(fd, address, sharingPort: false)
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// Throws EADDRINUSE when another socket already holds a TCP `address`, even one that shares
    /// its port with SO_REUSEPORT: a socket that does not ask to share (this probe) cannot bind
    /// beside it. Called before a server binds its own sharing sockets, so a second process on the
    /// same port is refused unless sharing was asked for. (Between the probe and the bind another
    /// process could still take the port: the window is the few microseconds between two binds.)
    static func requireFree(_ address: ListenAddress) throws(SystemError) {
        let family: Int32
        switch address {
        case .inet: family = AF_INET
        case .inet6: family = AF_INET6
        case .unix: return
        }
        let fd = try mustSucceed("socket", { Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) })
        defer { close(fd) }
        try bindTCP(fd, address, sharingPort: false)
    }

    /// Binds `fd` to an IP `address` (a TCP socket's or a UDP one's): SO_REUSEADDR always (it only passes over connections of an
    /// earlier run left in TIME_WAIT), SO_REUSEPORT when `sharingPort`, an IPv6 socket IPv6 only.
    private static func bindTCP(_ fd: Int32, _ address: ListenAddress, sharingPort: Bool) throws(SystemError) {
        var on: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        try mustSucceed("setsockopt(SO_REUSEADDR)", { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, size) })
        if sharingPort { try mustSucceed("setsockopt(SO_REUSEPORT)", { setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, size) }) }
        switch address {
        case .inet(let host, let port):
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = port.bigEndian
            inet_pton(AF_INET, host, &addr.sin_addr)
            try bind(fd, &addr, address)
        case .inet6(let host, let port):
            try mustSucceed("setsockopt(IPV6_V6ONLY)", { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, size) })
            var addr = sockaddr_in6()
            addr.sin6_family = sa_family_t(AF_INET6)
            addr.sin6_port = port.bigEndian
            inet_pton(AF_INET6, host, &addr.sin6_addr)
            try bind(fd, &addr, address)
        case .unix:
            return
        }
    }

    /// bind(2) for any sockaddr_* structure.
    private static func bind<Address>(_ fd: Int32, _ addr: inout Address, _ address: ListenAddress) throws(SystemError) {
        let size = socklen_t(MemoryLayout<Address>.size)
        _ = try withUnsafePointer(to: &addr) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw throws(SystemError) in
                try mustSucceed("bind \(address)", { Glibc.bind(fd, raw, size) })
            }
        }
    }

    /// The port a TCP listener was bound to (for port 0 in tests).
    static func boundPort(_ fd: Int32) -> UInt16? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard ok == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) } }
        case AF_INET6:
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) } }
        default:
            return nil
        }
    }

    /// Accepts one connection, non-blocking and close-on-exec; nil when none is waiting.
    static func accept(_ listener: Int32) throws(SystemError) -> (fd: Int32, peer: String)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = try systemCall("accept4") {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept4(listener, $0, &length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
                }
            }
        }
        guard case .done(let fd) = result else { return nil }
        var on: Int32 = 1
        if Int32(storage.ss_family) != AF_UNIX {
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        }
        return (fd, peerDescription(storage))
    }

    /// A NUL-terminated C string in a buffer, as text.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func peerDescription(_ storage: sockaddr_storage) -> String {
        var storage = storage
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { addr in
                    var address = addr.pointee.sin_addr
                    inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count))
                    return Self.text(buffer)
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { addr in
                    var address = addr.pointee.sin6_addr
                    inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count))
                    return Self.text(buffer)
                }
            }
        default:
            return "unix"
        }
    }
}
