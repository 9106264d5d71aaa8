#if canImport(Glibc)
import Glibc
#endif

/// Where to listen: `host:port` (IPv4 or `[v6]:port`) or `unix:/path` (ROOST_LISTEN).
public enum ListenAddress: Sendable, Equatable, CustomStringConvertible {
    case inet(host: String, port: UInt16)
    case inet6(host: String, port: UInt16)
    case unix(path: String)

    /// Parses one address; `ROOST_LISTEN` may hold several, comma-separated.
    public static func parse(_ text: String) throws -> ListenAddress {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("unix:") {
            let path = String(trimmed.dropFirst(5))
            guard !path.isEmpty, path.utf8.count < 108 else {
                throw ConfigurationError("unix socket path must be 1 to 107 bytes: '\(trimmed)'")
            }
            return .unix(path: path)
        }
        guard let colon = trimmed.lastIndex(of: ":"), let port = UInt16(trimmed[trimmed.index(after: colon)...]) else {
            throw ConfigurationError("listen address must be HOST:PORT, [IPV6]:PORT or unix:/PATH, not '\(trimmed)'")
        }
        var host = String(trimmed[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            var probe = in6_addr()
            guard inet_pton(AF_INET6, host, &probe) == 1 else { throw ConfigurationError("'\(host)' is not an IPv6 address") }
            return .inet6(host: host, port: port)
        }
        if host == "localhost" { host = "127.0.0.1" }
        var probe = in_addr()
        guard inet_pton(AF_INET, host, &probe) == 1 else {
            throw ConfigurationError("'\(host)' is not an IPv4 address (use [::1] for IPv6)")
        }
        return .inet(host: host, port: port)
    }

    public static func parseList(_ text: String) throws -> [ListenAddress] {
        let addresses = try text.split(separator: ",").map { try parse(String($0)) }
        guard !addresses.isEmpty else { throw ConfigurationError("no listen address given") }
        return addresses
    }

    public var description: String {
        switch self {
        case .inet(let host, let port): return "\(host):\(port)"
        case .inet6(let host, let port): return "[\(host)]:\(port)"
        case .unix(let path): return "unix:\(path)"
        }
    }

    /// The TCP port (0: any free one); nil for a Unix socket.
    var port: UInt16? {
        switch self {
        case .inet(_, let port), .inet6(_, let port): port
        case .unix: nil
        }
    }

    /// True where several sockets may share the address (SO_REUSEPORT): TCP only.
    var sharesAcrossSockets: Bool {
        if case .unix = self { return false }
        return true
    }
}

import Foundation
