/// A CIDR block, `127.0.0.0/8` or `fd00::/8` (RFC 4632, RFC 4291 §2.3): an address and a
/// prefix length no longer than the address. A bare address is its own /32 or /128. The
/// operator's `ROOST_OUTBOUND_ALLOW_NETS` is a list of these.
public struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    public let address: IPAddress
    public let prefixLength: Int

    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0]) else { return nil }
        let bits = address.bytes.count * 8
        var length = bits
        if parts.count == 2 {
            guard (1...3).contains(parts[1].utf8.count), parts[1].utf8.allSatisfy(ASCII.isDigit), let value = Int(parts[1]), value <= bits else {
                return nil
            }
            length = value
        }
        self.address = address
        prefixLength = length
    }

    /// Whether `other` is in this block (never across families).
    public func contains(_ other: IPAddress) -> Bool {
        guard other.bytes.count == address.bytes.count else { return false }
        var left = prefixLength
        for (mine, theirs) in zip(address.bytes, other.bytes) {
            guard left > 0 else { return true }
            let mask: UInt8 = left >= 8 ? 0xFF : ~(0xFF >> UInt8(left))
            guard mine & mask == theirs & mask else { return false }
            left -= 8
        }
        return true
    }

    public var description: String { "\(address)/\(prefixLength)" }

    /// IPv6 global unicast (RFC 4291 §2.4): the only IPv6 block that can be public.
    static let globalUnicast = IPNetwork("2000::/3")!

    /// A comma-separated list of blocks, or nil naming the first that is not one.
    public static func list(_ text: String) -> Result<[IPNetwork], OutboundRefusal> {
        var networks: [IPNetwork] = []
        for item in text.split(separator: ",") {
            let trimmed = item.trimmingSpaces
            guard let network = IPNetwork(trimmed) else { return .failure(OutboundRefusal("'\(trimmed)' is not a network such as 127.0.0.0/8 or fd00::/8")) }
            networks.append(network)
        }
        return .success(networks)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return text
    }
}
