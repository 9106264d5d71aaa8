// libFuzzer target for OutboundPolicy.url and OutboundURL, the only way a request leaves Roost.
// Compiled together with RoostProtocol's sources by scripts/fuzz. The first byte picks the
// source (operator or subscriber) and whether 127.0.0.0/8 is allowed; the rest is the URL.
// Checks that no input traps, that whatever is taken puts only printable ASCII (never CR, LF,
// NUL, space or %) in the host and only printable ASCII in the target, and that a taken URL
// reads back the same from its own text.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOutboundURL(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let source: OutboundPolicy.Source = data[0] & 1 == 0 ? .operator : .subscriber
    let policy = OutboundPolicy(allowedNetworks: data[0] & 2 == 0 ? [] : [IPNetwork("127.0.0.0/8")!])
    let text = String(decoding: UnsafeBufferPointer(start: data + 1, count: size - 1), as: UTF8.self)
    let schemes: Set<String> = ["https", "http", "smtp", "smtps", "smtp+plain"]
    guard let url = try? policy.url(text, from: source, schemes: schemes) else { return 0 }
    precondition(url.hostText.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "%") && $0 != UInt8(ascii: "@") }, "a host with a byte it must not have")
    precondition(url.target.first == "/" && url.target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "a target with a byte it must not have")
    precondition((1...65_535).contains(url.port), "a port out of range")
    if source == .subscriber, case .address(let address) = url.host {
        precondition(policy.isAllowed(address), "a subscriber's IP literal outside the allowed networks")
    }
    let again = try? policy.url(url.origin + url.target, from: source, schemes: schemes)
    precondition(again == url, "a taken URL read back otherwise from its own text")
    return 0
}
