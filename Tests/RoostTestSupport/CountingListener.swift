#if canImport(Glibc)
import Glibc
#endif

/// A TCP listener on 127.0.0.1 that never answers: it tells how many connections reached it.
/// The kernel completes a handshake without `accept`, so once the code under test has returned,
/// `acceptedSoFar()` sees every connection it made, with no waiting.
public final class CountingListener: @unchecked Sendable {
    // The descriptor is written once in init and read by one test at a time.
    private let fd: Int32
    public let port: Int
    private var count = 0

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard fd >= 0, bound else {
            close(fd)
            throw TestClientError("cannot listen on 127.0.0.1")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }

    /// Connections made to this listener so far (each accepted and closed as it is counted).
    public func acceptedSoFar() -> Int {
        while true {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return count }
            close(client)
            count += 1
        }
    }
}
