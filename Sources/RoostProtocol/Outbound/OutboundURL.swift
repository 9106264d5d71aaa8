import Foundation

/// Why an outbound request was not made: a URL the policy does not take, or an address it
/// will not connect to. The text says which rule, for a 400's message or an outbox row's error.
public struct OutboundRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A URL Roost may send a request to, read from its raw, percent-encoded bytes and only by
/// `OutboundPolicy` (its initializer is internal to RoostProtocol): every byte is printable
/// ASCII (no space, CR, LF, NUL, backslash or non-ASCII), no userinfo, no fragment, a host of
/// `[A-Za-z0-9-]` labels or a strict IP literal, and never a `%` in the authority. The
/// host, port and target are what the connection and the request line use, byte for byte, so
/// nothing a percent-decoder, a resolver or a TLS library reads differently can slip through.
public struct OutboundURL: Hashable, Sendable, CustomStringConvertible {
    public enum Host: Hashable, Sendable {
        case name(String)
        case address(IPAddress)
    }

    /// Lower case: `https`, `http`, `smtp`, `smtps` or `smtp+plain`.
    public let scheme: String
    public let host: Host
    public let port: Int
    public let hasDefaultPort: Bool
    /// The path and query exactly as given (`/` when there was none): the request target.
    public let target: String
    /// Who chose it: a subscriber's URL is held to public addresses (`OutboundPolicy`).
    public let source: OutboundPolicy.Source

    init(scheme: String, host: Host, port: Int, target: String, source: OutboundPolicy.Source) {
        self.scheme = scheme
        self.host = host
        self.port = port
        hasDefaultPort = Self.defaultPorts[scheme] == port
        self.target = target
        self.source = source
    }

    static let defaultPorts = ["https": 443, "http": 80, "smtp": 587, "smtps": 465, "smtp+plain": 25]

    /// The host as a resolver, SNI and certificate check take it: a name, or an address's text.
    public var hostText: String {
        switch host {
        case .name(let name): name
        case .address(let address): address.description
        }
    }

    /// `host[:port]`, IPv6 in brackets, the port only when it is not the scheme's: the `Host`
    /// header and a VAPID audience's authority.
    public var authority: String {
        let host = if case .address(let address) = host, !address.isV4 { "[\(address)]" } else { hostText }
        return hasDefaultPort ? host : "\(host):\(port)"
    }

    /// `scheme://authority` (a VAPID `aud`, RFC 8292 §2).
    public var origin: String { "\(scheme)://\(authority)" }

    public var description: String { origin + (target == "/" && !scheme.hasPrefix("http") ? "" : target) }

    /// Reads the raw URL's parts; the policy decides on them after.
    static func parse(_ text: String, source: OutboundPolicy.Source) throws(OutboundRefusal) -> OutboundURL {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= 2048 else { throw OutboundRefusal("a URL is 1 to 2,048 bytes") }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }) else {
            throw OutboundRefusal("a URL is printable ASCII: no space, control character, backslash or non-ASCII byte")
        }
        guard let separator = text.range(of: "://") else { throw OutboundRefusal("a URL starts with its scheme and ://") }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard let defaultPort = defaultPorts[scheme] else { throw OutboundRefusal("the scheme \(scheme) is not one Roost sends to") }
        let rest = text[separator.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var target = String(rest[authorityEnd...])
        guard !target.contains("#") else { throw OutboundRefusal("a URL Roost sends to has no fragment (#)") }
        guard !authority.contains("@") else { throw OutboundRefusal("a URL Roost sends to carries no user or password (@)") }
        guard !authority.contains("%") else { throw OutboundRefusal("a host is never percent-encoded (%)") }
        try checkPercentEncoding(target)
        if target.isEmpty { target = "/" } else if target.hasPrefix("?") { target = "/" + target }

        // The host: [IPv6], or up to the last colon when a port follows.
        var hostText = Substring(authority), portText: Substring? = nil
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw OutboundRefusal("an IPv6 host ends with ]") }
            hostText = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw OutboundRefusal("only a port may follow an IPv6 host") }
                portText = after.dropFirst()
            }
            guard let address = IPAddress(hostText), !address.isV4 else { throw OutboundRefusal("[\(hostText)] is not an IPv6 address") }
            return OutboundURL(scheme: scheme, host: .address(address), port: try port(portText, default: defaultPort), target: target, source: source)
        }
        if let colon = authority.lastIndex(of: ":") {
            hostText = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        let port = try port(portText, default: defaultPort)
        if let address = IPAddress(hostText), address.isV4 {
            return OutboundURL(scheme: scheme, host: .address(address), port: port, target: target, source: source)
        }
        return OutboundURL(scheme: scheme, host: .name(try name(hostText)), port: port, target: target, source: source)
    }

    /// A DNS name of letters, digits and hyphens (RFC 1123 §2.1), lower-cased, with no empty
    /// label (so no trailing dot) and a last label that starts with a letter: `2130706433`,
    /// `0x7f000001` and `127.1` are addresses to `inet_aton`, so they are no names here.
    private static func name(_ text: Substring) throws(OutboundRefusal) -> String {
        let lower = text.lowercased()
        let labels = lower.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...253).contains(lower.utf8.count),
              labels.allSatisfy({ label in
                  (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                      && label.utf8.allSatisfy { ASCII.isDigit($0) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D }
              }) else {
            throw OutboundRefusal("'\(text)' is not a host name of letters, digits, hyphens and dots")
        }
        guard let first = labels.last?.utf8.first, first >= 0x61, first <= 0x7A else {
            throw OutboundRefusal("'\(text)' reads as a number, not a host name (use a dotted IPv4 address or a name)")
        }
        return lower
    }

    private static func port(_ text: Substring?, default defaultPort: Int) throws(OutboundRefusal) -> Int {
        guard let text else { return defaultPort }
        guard (1...5).contains(text.utf8.count), text.utf8.allSatisfy(ASCII.isDigit), let port = Int(text), (1...65_535).contains(port) else {
            throw OutboundRefusal("the port must be a number from 1 to 65535")
        }
        return port
    }

    /// Every `%` in the path and query starts a `%XX` escape; the escapes are sent as they are.
    private static func checkPercentEncoding(_ target: String) throws(OutboundRefusal) {
        let bytes = Array(target.utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, ASCII.hexValue(bytes[index + 1]) != nil, ASCII.hexValue(bytes[index + 2]) != nil else {
                    throw OutboundRefusal("every % in a URL's path or query starts a %XX escape")
                }
                index += 3
            } else {
                index += 1
            }
        }
    }
}
