import RoostProtocol
import Testing

/// The outbound policy's URL reading and address rules over the classic SSRF list.
struct OutboundURLTests {
    let policy = OutboundPolicy()
    let local = OutboundPolicy(allowedNetworks: [IPNetwork("127.0.0.0/8")!])

    func endpoint(_ text: String, _ policy: OutboundPolicy? = nil) -> Result<OutboundURL, OutboundRefusal> {
        Result { () throws(OutboundRefusal) in try (policy ?? self.policy).url(text, from: .subscriber, schemes: ["https"]) }
    }

    @Test(arguments: [
        "https://127.0.0.1%00.push.apple.com:9/x", "https://127.0.0.1%2f.push.apple.com/x", "https://push.example%2ecom/x",
        "https://push.example.com/x\r\nHost: evil", "https://push.example.com/a b", "https://push.example.com/a\u{0}b",
        "https://push.example.com/\u{7f}", "https://pùsh.example.com/x", "https://push.example.com\\@evil.example/x",
        "https://user@push.example.com/x", "https://user:pw@push.example.com/x", "https://push.example.com:8443/x",
        "https://push.example.com:0/x", "https://push.example.com:99999/x", "https://push.example.com:/x", "https://push.example.com:+443/x",
        "https://127.0.0.1/x", "https://[::1]/x", "https://[::ffff:127.0.0.1]/x", "https://[::ffff:7f00:1]/x", "https://[fe80::1%25eth0]/x",
        "https://2130706433/x", "https://0177.0.0.1/x", "https://0x7f000001/x", "https://0x7f.0.0.1/x", "https://127.1/x",
        "https://127.000.000.001/x", "https://localhost./x", "https://push.example.com./x", "https://.push.example.com/x",
        "https://push..example.com/x", "https://-push.example.com/x", "https://push-.example.com/x", "https://push_1.example.com/x",
        "http://push.example.com/x", "ftp://push.example.com/x", "gopher://push.example.com:70/_x", "https:/push.example.com/x",
        "https://push.example.com/x#frag", "https://push.example.com/x%zz", "https://push.example.com/x%0", "https://", "",
        String(repeating: "a", count: 3000),
    ])
    func hostileEndpointsAreRefused(_ text: String) {
        if case .success(let url) = endpoint(text) { Issue.record("\(text.debugDescription) was taken as \(url)") }
    }

    @Test func aGoodEndpointKeepsItsTargetByteForByte() throws {
        let url = try endpoint("HTTPS://Web.Push.Apple.com/3/device/x%0d%0aHost:%20evil?topic=a%2Fb").get()
        #expect(url.scheme == "https" && url.host == .name("web.push.apple.com") && url.port == 443 && url.hasDefaultPort)
        #expect(url.target == "/3/device/x%0d%0aHost:%20evil?topic=a%2Fb", "escapes are sent as escapes, never decoded")
        #expect(url.authority == "web.push.apple.com" && url.origin == "https://web.push.apple.com")
        #expect(try endpoint("https://fcm.googleapis.com").get().target == "/")
        #expect(try endpoint("https://fcm.googleapis.com?a=1").get().target == "/?a=1")
        #expect(try endpoint("https://xn--80ak6aa92e.example/x").get().hostText == "xn--80ak6aa92e.example", "punycode is a name")
    }

    @Test func anAllowedNetworkMayBeReachedByAddressAndOnAnyPort() throws {
        #expect(try endpoint("https://127.0.0.1:8443/x", local).get().authority == "127.0.0.1:8443")
        #expect(try endpoint("https://localhost:8443/x", local).get().port == 8443)
        #expect(throws: OutboundRefusal.self) { try endpoint("https://10.0.0.1/x", local).get() }
        let ipv6 = try OutboundPolicy(allowedNetworks: [IPNetwork("::1")!]).url("https://[::1]:9/x", from: .subscriber, schemes: ["https"])
        #expect(ipv6.authority == "[::1]:9" && ipv6.hostText == "::1")
    }

    @Test func everyAddressANameLeadsToIsJudgedAtConnectTime() throws {
        let url = try endpoint("https://push.example.com/x").get()
        for text in ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1",
                     "255.255.255.255", "192.0.2.1", "::1", "::", "::ffff:93.184.215.14", "::ffff:127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::",
                     "2001:0:4136:e378::1", "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1", "2001:db8::1", "::127.0.0.1"] {
            #expect(policy.refusal(of: IPAddress(text)!, for: url) != nil, "\(text) was admitted")
        }
        for text in ["93.184.215.14", "1.1.1.1", "172.32.0.1", "2606:4700::1111", "2a00:1450:4001:82b::200a"] {
            #expect(policy.refusal(of: IPAddress(text)!, for: url) == nil, "\(text) was refused")
        }
        #expect(local.refusal(of: IPAddress("127.0.0.1")!, for: url) == nil)
        #expect(local.refusal(of: IPAddress("10.0.0.1")!, for: url) != nil)
        // The operator's own URLs (a webhook, an SMTP relay) may lead anywhere.
        let webhook = try policy.url("http://127.0.0.1:9000/hook", from: .operator, schemes: ["http", "https"])
        #expect(policy.refusal(of: IPAddress("127.0.0.1")!, for: webhook) == nil && webhook.authority == "127.0.0.1:9000")
        #expect(throws: OutboundRefusal.self) { try policy.url("http://127.0.0.1:9000/a b", from: .operator, schemes: ["http"]) }
    }

    @Test func addressesReadOnlyTheirStrictForms() {
        #expect(IPAddress("192.168.0.1")?.bytes == [192, 168, 0, 1])
        for text in ["192.168.0", "192.168.0.1.2", "192.168.0.256", "01.2.3.4", "1.2.3.-4", " 1.2.3.4", "1.2.3.4 ", "0x1.2.3.4",
                     "1::2::3", ":::", "1:2:3:4:5:6:7:8:9", "12345::", "::g", "1:2:3:4:5:6:7::8", "fe80::1%eth0", "[::1]", ""] {
            #expect(IPAddress(text) == nil, "\(text.debugDescription) was read")
        }
        #expect(IPAddress("::ffff:1.2.3.4")?.bytes == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 1, 2, 3, 4])
        #expect(IPAddress("2001:DB8:0:0:1:0:0:1")?.description == "2001:db8::1:0:0:1", "RFC 5952 §4.2.3: the first longest run")
        #expect(IPAddress("1:2:3:4:5:6:7:8")?.description == "1:2:3:4:5:6:7:8" && IPAddress("::")?.description == "::")
        #expect(IPAddress("1::")?.description == "1::" && IPAddress("::2:0")?.description == "::2:0")
    }

    @Test func networksContainTheirAddressesOnly() throws {
        let network = try #require(IPNetwork("172.16.0.0/12"))
        #expect(network.contains(IPAddress("172.31.255.255")!) && !network.contains(IPAddress("172.32.0.0")!))
        #expect(!network.contains(IPAddress("::ffff:172.16.0.1")!), "never across families")
        #expect(IPNetwork("10.0.0.0/33") == nil && IPNetwork("fd00::/129") == nil && IPNetwork("10.0.0.0/") == nil && IPNetwork("x/8") == nil)
        #expect(IPNetwork("0.0.0.0/0")!.contains(IPAddress("8.8.8.8")!))
        if case .failure(let refusal) = IPNetwork.list("127.0.0.0/8, nonsense") { #expect(refusal.description.contains("nonsense")) } else { Issue.record("taken") }
        #expect((try? IPNetwork.list("127.0.0.0/8, ::1/128").get())?.count == 2)
    }
}
