import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The proxies whose `X-Forwarded-For` is believed (`ROOST_TRUSTED_PROXIES`, a comma-separated
/// CIDR list, default none), and the client address a request is throttled by: the TCP peer,
/// or, when the peer is a trusted proxy, the rightmost address in `X-Forwarded-For` that is not
/// one (what a client writes to the left of it is its own claim and is ignored).
package struct TrustedProxies: Sendable {
    struct Network: Sendable, Equatable {
        let bytes: [UInt8]
        let prefix: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var remaining = prefix
            for index in 0..<bytes.count where remaining > 0 {
                let bits = min(8, remaining)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if address[index] & mask != bytes[index] & mask { return false }
                remaining -= bits
            }
            return true
        }
    }

    let networks: [Network]

    package static let none = TrustedProxies(networks: [])

    init(networks: [Network]) {
        self.networks = networks
    }

    /// Parses `10.0.0.0/8, 192.168.1.1, ::1/128`; nil names the entry that is not a network.
    package init(parsing list: String) throws(ConfigurationError) {
        var networks: [Network] = []
        for entry in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            let parts = entry.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count <= 2, let bytes = Self.parse(String(parts[0])) else {
                throw ConfigurationError("ROOST_TRUSTED_PROXIES: '\(entry)' is not an address or a network (CIDR)")
            }
            let prefix = parts.count == 2 ? Int(parts[1]) : bytes.count * 8
            guard let prefix, (0...(bytes.count * 8)).contains(prefix) else {
                throw ConfigurationError("ROOST_TRUSTED_PROXIES: '\(entry)' has a prefix length out of range")
            }
            networks.append(Network(bytes: bytes, prefix: prefix))
        }
        self.networks = networks
    }

    package func trusts(_ address: String) -> Bool {
        guard !networks.isEmpty, let bytes = Self.parse(address) else { return false }
        return networks.contains { $0.contains(bytes) }
    }

    /// The address a request comes from (see the type's comment).
    package func client(peer: String, forwardedFor: String?) -> String {
        guard trusts(peer), let forwardedFor else { return peer }
        for hop in forwardedFor.split(separator: ",").reversed() {
            let address = hop.trimmingCharacters(in: .whitespaces)
            guard Self.parse(address) != nil else { return peer }  // garbage from a proxy: keep what we know
            if !trusts(address) { return address }
        }
        return peer
    }

    /// What a per-address throttle counts by: an IPv4 address, or an IPv6 address's /64 (one
    /// subscriber usually holds a whole /64, so counting single addresses would count nothing).
    package static func throttleKey(_ address: String) -> String {
        guard let bytes = parse(address), bytes.count == 16 else { return address }
        let words = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return words.joined(separator: ":") + "::/64"
    }

    /// The network an address is shown as (a user's list of sessions): an IPv4 address's /24 or
    /// an IPv6 address's /48, enough to tell "home" from "abroad", never the address itself;
    /// anything else (a Unix socket's peer) as it is.
    package static func network(_ address: String) -> String {
        guard let bytes = parse(address) else { return address }
        if bytes.count == 4 { return "\(bytes[0]).\(bytes[1]).\(bytes[2]).0/24" }
        let words = stride(from: 0, to: 6, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return words.joined(separator: ":") + "::/48"
    }

    /// An IPv4 (4 bytes) or IPv6 (16 bytes) address in text, or nil.
    static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}
