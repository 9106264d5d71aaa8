/// An IPv4 or IPv6 address as its bytes (4 or 16), read only from the strict text forms:
/// dotted decimal with four parts and no leading zeros (not the decimal `2130706433`, octal
/// `0177.0.0.1`, hex `0x7f.1` or short `127.1` forms that `inet_aton` also takes), and RFC 4291
/// §2.2 for IPv6 with no zone. What outbound requests may reach is decided on these bytes
/// (`scope`), never on text.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public var isV4: Bool { bytes.count == 4 }

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// A dotted-quad IPv4 or an IPv6 address (without brackets), or nil.
    public init?(_ text: some StringProtocol) {
        if let v4 = Self.parseV4(Array(text.utf8)) {
            bytes = v4
        } else if let v6 = Self.parseV6(Array(text.utf8)) {
            bytes = v6
        } else {
            return nil
        }
    }

    private static func parseV4(_ text: [UInt8]) -> [UInt8]? {
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(ASCII.isDigit), part.count == 1 || part.first != UInt8(ascii: "0") else { return nil }
            let value = part.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            guard value <= 255 else { return nil }
            bytes.append(UInt8(value))
        }
        return bytes
    }

    private static func parseV6(_ text: [UInt8]) -> [UInt8]? {
        guard text.count >= 2, text.count <= 45 else { return nil }
        let colon = UInt8(ascii: ":")
        // Split around the one "::" there may be; each side is groups of up to 4 hex digits.
        var head = text[...], tail: ArraySlice<UInt8>? = nil
        if let gap = (0..<(text.count - 1)).first(where: { text[$0] == colon && text[$0 + 1] == colon }) {
            head = text[..<gap]
            tail = text[(gap + 2)...]
            // ":::" and a second "::" leave an empty group, which `groups` refuses.
            guard tail?.first != colon else { return nil }
        }
        func groups(_ side: ArraySlice<UInt8>, allowV4Tail: Bool) -> [UInt8]? {
            guard !side.isEmpty else { return [] }
            var out: [UInt8] = []
            let pieces = side.split(separator: colon, omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if index == pieces.count - 1, allowV4Tail, piece.contains(UInt8(ascii: ".")) {
                    guard let v4 = parseV4(Array(piece)) else { return nil }
                    out += v4
                    continue
                }
                guard (1...4).contains(piece.count), piece.allSatisfy({ ASCII.hexValue($0) != nil }) else { return nil }
                let value = piece.reduce(0) { $0 * 16 + Int(ASCII.hexValue($1) ?? 0) }
                out += [UInt8(value >> 8), UInt8(value & 0xFF)]
            }
            return out
        }
        if let tail {
            guard let front = groups(head, allowV4Tail: false), let back = groups(tail, allowV4Tail: true),
                  front.count + back.count <= 14 else { return nil }
            return front + [UInt8](repeating: 0, count: 16 - front.count - back.count) + back
        }
        guard let all = groups(head, allowV4Tail: true), all.count == 16 else { return nil }
        return all
    }

    /// Dotted decimal, or RFC 5952's form for IPv6 (lower case, the longest run of zero groups
    /// as `::`).
    public var description: String {
        if isV4 { return bytes.map(String.init).joined(separator: ".") }
        let groups = stride(from: 0, to: 16, by: 2).map { Int(bytes[$0]) << 8 | Int(bytes[$0 + 1]) }
        var best = (start: -1, length: 0), run = (start: -1, length: 0)
        for (index, group) in groups.enumerated() {
            if group == 0 {
                run = run.start < 0 ? (index, 1) : (run.start, run.length + 1)
                if run.length > best.length { best = run }
            } else {
                run = (-1, 0)
            }
        }
        let hex = groups.map { String($0, radix: 16) }
        guard best.length >= 2 else { return hex.joined(separator: ":") }
        return hex[..<best.start].joined(separator: ":") + "::" + hex[(best.start + best.length)...].joined(separator: ":")
    }
}

extension IPAddress {
    /// Where an address leads. Only `.public` may be reached from a member's endpoint unless
    /// the operator allows its network (`ROOST_OUTBOUND_ALLOW_NETS`).
    public enum Scope: String, Sendable {
        case `public`
        case unspecified, loopback, `private`, linkLocal = "link-local", sharedAddressSpace = "shared (CGNAT)", multicast
        case uniqueLocal = "unique-local", mappedOrTranslated = "IPv4-mapped, -compatible or translated"
        case reserved = "reserved or documentation"
    }

    /// The special-purpose blocks of RFC 6890 (IPv4 and IPv6 registries), and every IPv6
    /// address outside global unicast 2000::/3. IPv6 forms that carry an IPv4 address (mapped,
    /// compatible, NAT64, 6to4, Teredo) are never public: they could lead to any IPv4 address.
    public var scope: Scope {
        if isV4 {
            for (network, scope) in Self.v4Blocks where network.contains(self) { return scope }
            return .public
        }
        for (network, scope) in Self.v6Blocks where network.contains(self) { return scope }
        return IPNetwork.globalUnicast.contains(self) ? .public : .reserved
    }

    private static let v4Blocks: [(IPNetwork, Scope)] = ([
        ("0.0.0.0/8", .unspecified), ("10.0.0.0/8", .private), ("100.64.0.0/10", .sharedAddressSpace), ("127.0.0.0/8", .loopback),
        ("169.254.0.0/16", .linkLocal), ("172.16.0.0/12", .private), ("192.0.0.0/24", .reserved), ("192.0.2.0/24", .reserved),
        ("192.88.99.0/24", .reserved), ("192.168.0.0/16", .private), ("198.18.0.0/15", .reserved), ("198.51.100.0/24", .reserved),
        ("203.0.113.0/24", .reserved), ("224.0.0.0/4", .multicast), ("240.0.0.0/4", .reserved),
    ] as [(String, Scope)]).map { (IPNetwork($0.0)!, $0.1) }

    private static let v6Blocks: [(IPNetwork, Scope)] = ([
        ("::/128", .unspecified), ("::1/128", .loopback), ("::ffff:0:0/96", .mappedOrTranslated), ("::/96", .mappedOrTranslated),
        ("64:ff9b::/96", .mappedOrTranslated), ("64:ff9b:1::/48", .mappedOrTranslated), ("2001::/32", .mappedOrTranslated),
        ("2002::/16", .mappedOrTranslated), ("2001:db8::/32", .reserved), ("2001::/23", .reserved), ("100::/64", .reserved),
        ("fc00::/7", .uniqueLocal), ("fe80::/10", .linkLocal), ("fec0::/10", .linkLocal), ("ff00::/8", .multicast),
    ] as [(String, Scope)]).map { (IPNetwork($0.0)!, $0.1) }
}
