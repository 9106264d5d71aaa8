import CTLS
import Foundation
import RoostProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The client side of TLS for every outbound connection (the delivery worker's, the warning
/// feeds' polls), with libssl: certificates and host names are
/// always verified, against the system trust store plus, optionally, one more CA file
/// (`ROOST_TLS_CA_FILE`). TLS 1.2 at least. One context serves every connection.
final class TLSClientContext: @unchecked Sendable {
    // An SSL_CTX is safe to share once configured; it is never changed after init.
    fileprivate let context: OpaquePointer

    init(extraCAFile: String? = nil) throws {
        _ = Self.noBrokenPipeSignal
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw OutboundFailure("TLS: \(Self.lastError())") }
        self.context = context
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        _ = SSL_CTX_ctrl(context, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
        guard SSL_CTX_set_default_verify_paths(context) == 1 else { throw OutboundFailure("TLS: cannot load the system trust store: \(Self.lastError())") }
        if let extraCAFile {
            guard SSL_CTX_load_verify_locations(context, extraCAFile, nil) == 1 else {
                throw OutboundFailure("TLS: cannot load the CA file \(extraCAFile): \(Self.lastError())")
            }
        }
    }

    deinit { SSL_CTX_free(context) }

    /// libssl writes with write(2), not send(2) with MSG_NOSIGNAL: a write to a kept connection
    /// the server has closed would raise SIGPIPE and end the process. Ignored once, process-wide
    /// (the write then fails with EPIPE, and the connection is dropped like any other failure).
    private static let noBrokenPipeSignal: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// The newest queued OpenSSL error as text (and the queue emptied).
    static func lastError() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "unknown error" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A TLS session kept to resume: one reference to OpenSSL's object, let go with the last user.
final class TLSSession: @unchecked Sendable {
    // Only handed to SSL_set_session, which takes a reference of its own.
    fileprivate let pointer: OpaquePointer

    fileprivate init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { SSL_SESSION_free(pointer) }
}

/// One outbound connection, plain or TLS (from the start, or after SMTP's STARTTLS), where
/// every step (resolve aside, connect, handshake, each read and write) ends by one deadline:
/// the socket never blocks, and waiting is `poll(2)` with what is left of the time. A server
/// that stalls costs its delivery (or poll) that much time and no more. Runs on the delivery
/// worker's or the feed poller's own threads, never on an event loop.
final class OutboundStream {
    let host: String
    let port: Int
    /// The host is an IP literal: the certificate must name that address (no SNI).
    private let isAddress: Bool
    /// When every step still to come must be done by: a kept connection sets it per request.
    var deadline: ContinuousClock.Instant
    private var fd: Int32
    private var tls: OpaquePointer?

    /// Connects (non-blocking) to where `url` leads, only at addresses the policy admits (each
    /// checked now, at connect time, and then connected to as it was checked: nothing resolves
    /// the name again), trying each in turn, giving up at `deadline`.
    init(to url: OutboundURL, through network: OutboundNetwork, deadline: ContinuousClock.Instant) throws(OutboundFailure) {
        host = url.hostText
        port = url.port
        if case .address = url.host { isAddress = true } else { isAddress = false }
        self.deadline = deadline
        fd = -1
        var failure = OutboundFailure("cannot connect to \(host):\(port)")
        for answer in try network.addresses(of: url) {
            do {
                try connect(answer)
                return
            } catch {
                failure = error
                close()
            }
        }
        throw failure
    }

    private func connect(_ answer: OutboundResolver.Answer) throws(OutboundFailure) {
        let family = answer.address.isV4 ? AF_INET : AF_INET6
        fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw OutboundFailure("socket failed: \(Self.text(errno))") }
        let result: Int32
        if answer.address.isV4 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(answer.port).bigEndian
            withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: answer.address.bytes) }
            result = Self.connect(fd, to: &address)
        } else {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(answer.port).bigEndian
            withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: answer.address.bytes) }
            result = Self.connect(fd, to: &address)
        }
        let target = "\(host):\(port) (\(answer.address))"
        if result != 0 {
            guard errno == EINPROGRESS else { throw OutboundFailure("cannot connect to \(target): \(Self.text(errno))") }
            try wait(for: .writing)
            var code: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
            guard code == 0 else { throw OutboundFailure("cannot connect to \(target): \(Self.text(code))") }
        }
    }

    /// `connect(2)` with a `sockaddr_in` or `sockaddr_in6`, as the address it is.
    private static func connect<Address>(_ fd: Int32, to address: inout Address) -> Int32 {
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<Address>.size)) }
        }
    }

    deinit { close() }

    func close() {
        if let tls {
            SSL_free(tls)
            self.tls = nil
        }
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    var isTLS: Bool { tls != nil }

    /// Whether the TLS handshake resumed an earlier session.
    var resumedSession: Bool { tls.map { SSL_session_reused($0) == 1 } ?? false }

    /// The connection's TLS session, to offer the next connection to the same origin; nil
    /// without TLS or before the server sent one (TLS 1.3 sends its tickets after the handshake).
    func tlsSession() -> TLSSession? {
        guard let tls, let session = SSL_get1_session(tls) else { return nil }
        guard SSL_SESSION_is_resumable(session) == 1 else {
            SSL_SESSION_free(session)
            return nil
        }
        return TLSSession(session)
    }

    /// Starts TLS on the connection: SNI, and the certificate must chain to a trusted CA and
    /// name `host` (a DNS name, or an IP address literal). `resuming`: a session of an earlier
    /// connection to the same origin, offered for resumption (the server may decline it; the
    /// certificate is checked either way).
    /// `protocols`: what ALPN offers (`h2`, `http/1.1`), in order of preference; none by default.
    func startTLS(_ context: TLSClientContext, resuming session: TLSSession? = nil, protocols: [String] = []) throws(OutboundFailure) {
        guard let ssl = SSL_new(context.context) else { throw OutboundFailure("TLS: \(TLSClientContext.lastError())") }
        tls = ssl
        SSL_set_fd(ssl, fd)
        if !protocols.isEmpty {
            let wire = protocols.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
            _ = wire.withUnsafeBufferPointer { SSL_set_alpn_protos(ssl, $0.baseAddress, UInt32($0.count)) }
        }
        // Writes may be partial, and a write retried after WANT_WRITE may come from another
        // buffer (Swift arrays move): what an HTTP/2 connection's loop needs.
        _ = SSL_ctrl(ssl, SSL_CTRL_MODE, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER), nil)
        if let session { SSL_set_session(ssl, session.pointer) }
        if isAddress {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
        } else {
            _ = host.withCString { SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name), UnsafeMutableRawPointer(mutating: $0)) }
            SSL_set1_host(ssl, host)
        }
        while true {
            let result = SSL_connect(ssl)
            if result == 1 { return }
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK {
                ERR_clear_error()
                throw OutboundFailure("TLS: the certificate of \(host) was refused: \(String(cString: X509_verify_cert_error_string(verify)))")
            }
            try settle(result, doing: "the TLS handshake")
        }
    }

    /// The protocol ALPN settled on, if the server chose one.
    var negotiatedProtocol: String? {
        guard let tls else { return nil }
        var name: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(tls, &name, &length)
        guard let name, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: name, count: Int(length)), as: UTF8.self)
    }

    /// The socket, for a loop that polls it along with other things (an HTTP/2 connection's).
    var descriptor: Int32 { fd }

    /// What a step that could not go on now waits for: readable or writable.
    enum Blocked: Error { case reading, writing }

    /// Writes what it can of `bytes` now, without waiting: how many were written (0 and why
    /// when none could be).
    func writeNow(_ bytes: ArraySlice<UInt8>) throws(OutboundFailure) -> (written: Int, blocked: Blocked?) {
        guard !bytes.isEmpty else { return (0, nil) }
        if let tls {
            var written = 0
            let result = bytes.withUnsafeBytes { SSL_write_ex(tls, $0.baseAddress, $0.count, &written) }
            if result == 1 { return (written, nil) }
            return (0, try blocked(result, doing: "sending"))
        }
        let count = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if count >= 0 { return (count, nil) }
        guard errno == EAGAIN || errno == EINTR else { throw OutboundFailure("sending to \(host):\(port) failed: \(Self.text(errno))") }
        return (0, .writing)
    }

    /// Reads what has arrived into `buffer`, without waiting: how many bytes (0 at the end of the
    /// stream), or what the read waits for. The caller keeps the buffer from read to read.
    func readNow(into buffer: inout [UInt8]) throws(OutboundFailure) -> Result<Int, Blocked> {
        if let tls {
            var count = 0
            let result = buffer.withUnsafeMutableBytes { SSL_read_ex(tls, $0.baseAddress, $0.count, &count) }
            if result == 1 { return .success(count) }
            if SSL_get_error(tls, result) == SSL_ERROR_ZERO_RETURN { return .success(0) }
            return .failure(try blocked(result, doing: "reading"))
        }
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count >= 0 { return .success(count) }
        guard errno == EAGAIN || errno == EINTR else { throw OutboundFailure("reading from \(host):\(port) failed: \(Self.text(errno))") }
        return .failure(.reading)
    }

    /// After a TLS call that did not complete, without waiting: what it waits for, or its error.
    private func blocked(_ result: Int32, doing what: String) throws(OutboundFailure) -> Blocked {
        switch SSL_get_error(tls, result) {
        case SSL_ERROR_WANT_READ: return .reading
        case SSL_ERROR_WANT_WRITE: return .writing
        case SSL_ERROR_SYSCALL: throw OutboundFailure("TLS: \(what) with \(host):\(port) failed: the connection ended")
        default: throw OutboundFailure("TLS: \(what) with \(host):\(port) failed: \(TLSClientContext.lastError())")
        }
    }

    /// Writes all of `bytes`, waiting (until the deadline) while the socket cannot take more.
    func write(_ bytes: [UInt8]) throws(OutboundFailure) {
        var sent = 0
        while sent < bytes.count {
            let (written, blocked) = try writeNow(bytes[sent...])
            if let blocked {
                try wait(for: blocked)
                continue
            }
            guard written > 0 else { throw OutboundFailure("sending to \(host):\(port) failed: nothing was written") }
            sent += written
        }
    }

    /// Up to `limit` bytes as soon as some arrive; empty at the end of the stream.
    func read(limit: Int = 16_384) throws(OutboundFailure) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: limit)
        while true {
            switch try readNow(into: &buffer) {
            case .success(let count): return Array(buffer[0..<count])
            case .failure(let blocked): try wait(for: blocked)
            }
        }
    }

    /// After a TLS call that did not complete: waits for what it wants, or throws its error.
    private func settle(_ result: Int32, doing what: String) throws(OutboundFailure) {
        guard tls != nil else { return }
        try wait(for: try blocked(result, doing: what))
    }

    /// Waits until the socket is ready for what `blocked` waits for, or throws when the deadline passes.
    private func wait(for blocked: Blocked) throws(OutboundFailure) {
        let events = Int16(blocked == .reading ? POLLIN : POLLOUT)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw OutboundFailure("\(host):\(port) did not answer in time") }
            var poller = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&poller, 1, Self.pollTimeout(left))
            if ready > 0 { return }
            if ready < 0, errno != EINTR { throw OutboundFailure("poll failed: \(Self.text(errno))") }
        }
    }

    /// `poll(2)`'s timeout for what is `left`: milliseconds, rounded up so a wait never ends
    /// early; 0 for nothing left.
    static func pollTimeout(_ left: Duration) -> Int32 {
        guard left > .zero else { return 0 }
        let (seconds, attoseconds) = left.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
    }

    private static func text(_ code: Int32) -> String { String(cString: strerror(code)) }
}
