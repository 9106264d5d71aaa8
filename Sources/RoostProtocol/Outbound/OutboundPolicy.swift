/// The one rule every request Roost makes goes through (docs/SECURITY.md, "Outbound
/// requests"): it alone makes an `OutboundURL`, and the connection asks it about every address
/// a name resolves to, at connect time, so a name that later resolves elsewhere is caught.
///
/// - The operator's URLs (webhook, SMTP relay) may use `http`, any port, an IP literal and any
///   address: the operator chose them.
/// - A subscriber's URL (a device's push endpoint) is `https` on the default port with a host
///   name, and every address it resolves to is public (`IPAddress.Scope`), unless the address
///   is in a network the operator allows (`ROOST_OUTBOUND_ALLOW_NETS`); only there may it use
///   another port or an IP literal.
public struct OutboundPolicy: Sendable, Equatable {
    /// Who supplied a URL.
    public enum Source: Sendable, Hashable {
        case `operator`
        case subscriber
    }

    /// Networks any URL may reach, whoever supplied it (tests and local relays: `127.0.0.0/8`).
    public let allowedNetworks: [IPNetwork]

    public init(allowedNetworks: [IPNetwork] = []) {
        self.allowedNetworks = allowedNetworks
    }

    /// `text` as a URL Roost may send to, when its scheme is one of `schemes` and it keeps the
    /// rules of its source; else why not.
    public func url(_ text: String, from source: Source, schemes: Set<String>) throws(OutboundRefusal) -> OutboundURL {
        let url = try OutboundURL.parse(text, source: source)
        guard schemes.contains(url.scheme) else {
            throw OutboundRefusal("the scheme must be \(schemes.sorted().joined(separator: " or ")), not \(url.scheme)")
        }
        guard source == .subscriber else { return url }
        if case .address(let address) = url.host, !isAllowed(address) {
            throw OutboundRefusal("an endpoint names its host, not an IP address")
        }
        // A name on another port is taken only where some network is allowed; the connection
        // then reaches it only at an address in one.
        guard url.hasDefaultPort || !allowedNetworks.isEmpty else {
            throw OutboundRefusal("an endpoint uses its scheme's default port (\(OutboundURL.defaultPorts[url.scheme] ?? 443))")
        }
        return url
    }

    /// Why `address` may not be connected to for `url`, or nil when it may.
    public func refusal(of address: IPAddress, for url: OutboundURL) -> OutboundRefusal? {
        guard url.source == .subscriber, !isAllowed(address) else { return nil }
        let scope = address.scope
        guard scope == .public else {
            return OutboundRefusal("\(url.hostText) resolves to \(address), a \(scope.rawValue) address, which endpoints may not reach")
        }
        guard url.hasDefaultPort else {
            return OutboundRefusal("\(url.hostText) resolves to \(address), outside ROOST_OUTBOUND_ALLOW_NETS, where only the default port is used")
        }
        return nil
    }

    public func isAllowed(_ address: IPAddress) -> Bool {
        allowedNetworks.contains { $0.contains(address) }
    }
}
