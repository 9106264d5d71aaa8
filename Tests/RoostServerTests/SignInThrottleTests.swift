import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Synchronization
import Testing

/// Sign-in and registration cannot be brute-forced or used to deny service (issue: hostile users).
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct SignInThrottleTests {
    static func code(_ body: [String: Any]) -> String? { (body["error"] as? [String: Any])?["code"] as? String }

    /// A login from `address` (behind the fixture's trusted proxy, loopback).
    static func login(_ client: APIClient, _ fields: [String: Any], from address: String) async throws -> (Int, [String: String], [String: Any]) {
        let data = try JSONSerialization.data(withJSONObject: fields)
        client.client.send("POST /v1/auth/login HTTP/1.1\r\nX-Forwarded-For: \(address)\r\nContent-Type: application/json\r\n"
                           + "Content-Length: \(data.count)\r\n\r\n" + String(decoding: data, as: UTF8.self))
        guard let response = await client.client.readResponse() else { throw TestClientError("no response to a login") }
        if response.headers["connection"] == "close" { try client.reconnect() }
        let body = (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:]
        return (response.status, response.headers, body)
    }

    @Test func aBodyNamingBothEmailAndPhoneIsRefusedSoARandomEmailCannotSidestepThePhonesThrottle() async throws {
        let api = try APIFixture()
        _ = try await api.person(["phone": "+4511223344", "display_name": "Vic"])
        // The attack: a fresh random email beside the victim's phone, each time.
        for _ in 0..<8 {
            let (status, body) = try await api.call("POST", "/v1/auth/login", ["tenant": api.tenant, "phone": "+4511223344",
                                                                                "email": "\(UUID().uuidString.prefix(8))@example.org",
                                                                                "password": "a guess at it"])
            #expect(status == 400 && Self.code(body) == "validation_failed" && (body["error"] as? [String: Any])?["field"] as? String == "phone")
        }
        // The real password still works: none of that counted against the account.
        #expect(try await api.call("POST", "/v1/auth/login", ["tenant": api.tenant, "phone": "+4511223344", "password": "a long enough password"]).0 == 200)
        await api.stop()
    }

    @Test func failuresCountPerAccountWhicheverIdentifierNamesIt() async throws {
        let api = try APIFixture()
        _ = try await api.person(["email": "wil@example.org", "phone": "+4522334455", "display_name": "Wil"])
        for index in 0..<Credentials.failuresPerIdentifier {
            let identifier: [String: Any] = index % 2 == 0 ? ["email": "wil@example.org"] : ["phone": "+4522334455"]
            #expect(try await api.call("POST", "/v1/auth/login", identifier.merging(["tenant": api.tenant, "password": "wrong \(index)"]) { $1 }).0 == 401)
        }
        // Three guesses by email and two by phone: the account has had five, even with the right password now.
        let (status, body) = try await api.call("POST", "/v1/auth/login", ["tenant": api.tenant, "phone": "+4522334455", "password": "a long enough password"])
        #expect(status == 429 && Self.code(body) == "rate_limited")
        await api.stop()
    }

    @Test func concurrentGuessesCannotRacePastTheLimit() async throws {
        let api = try APIFixture()
        _ = try await api.person(email: "xan@example.org")
        let (port, tenant) = (api.test.port, api.tenant)
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<20 {
                group.addTask {
                    try await APIClient(port: port).call("POST", "/v1/auth/login", ["tenant": tenant, "email": "xan@example.org", "password": "guess \(index)"]).0
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        // Never more than the limit get to try a password, however the twenty interleave (under
        // load a few may be turned away earlier, with 503, before they are counted).
        #expect(statuses.filter { $0 == 401 }.count <= Credentials.failuresPerIdentifier, "\(statuses.sorted())")
        #expect(statuses.filter { $0 == 429 }.count >= 20 - Credentials.failuresPerIdentifier - statuses.filter { $0 == 503 }.count)
        #expect(statuses.allSatisfy { [401, 429, 503].contains($0) })
        await api.stop()
    }

    @Test func registrationsAndUnknownTenantSignInsAreThrottledPerAddress() async throws {
        var limits = AbuseLimits.generous
        limits.registrationsPerAddressPerHour = 2
        limits.unknownTenantSignInsPerAddress = 3
        let api = try APIFixture(limits: limits, proxies: try TrustedProxies(parsing: "127.0.0.1/32"))
        let client = try APIClient(port: api.test.port)
        func register(_ email: String, from address: String) async throws -> (Int, [String: String]) {
            let data = try JSONSerialization.data(withJSONObject: ["tenant": api.tenant, "email": email, "password": "a long enough password",
                                                                   "display_name": "Reg"])
            client.client.send("POST /v1/auth/register HTTP/1.1\r\nX-Forwarded-For: \(address)\r\nContent-Type: application/json\r\n"
                               + "Content-Length: \(data.count)\r\n\r\n" + String(decoding: data, as: UTF8.self))
            let response = try #require(await client.client.readResponse())
            return (response.status, response.headers)
        }
        // Addresses of this run's own (the counters live in the database across tests).
        let prefix = "2001:db8:\(String(UInt16.random(in: 1...0xFFFE), radix: 16)):\(String(UInt16.random(in: 1...0xFFFE), radix: 16))"
        let v4 = "10.\(Int.random(in: 0...255)).\(Int.random(in: 0...255))"
        // One IPv6 subscriber's /64 is one address, however its last 64 bits vary.
        #expect(try await register("a@example.org", from: "\(prefix)::10").0 == 201)
        #expect(try await register("b@example.org", from: "\(prefix):ffff::1").0 == 201)
        let (refused, headers) = try await register("c@example.org", from: "\(prefix)::99")
        #expect(refused == 429 && Int(headers["retry-after"] ?? "") != nil)
        #expect(try await register("c@example.org", from: "\(prefix)::1".replacingOccurrences(of: "2001:db8", with: "2001:db9")).0 == 201)

        for index in 0..<3 {
            #expect(try await Self.login(client, ["tenant": "no-such-\(index)", "email": "a@example.org", "password": "x"], from: "\(v4).1").0 == 401)
        }
        #expect(try await Self.login(client, ["tenant": "no-such-9", "email": "a@example.org", "password": "x"], from: "\(v4).1").0 == 429)
        #expect(try await Self.login(client, ["tenant": "no-such-9", "email": "a@example.org", "password": "x"], from: "\(v4).2").0 == 401)
        await api.stop()
    }

    @Test func aFloodOfBadSignInsFromOneAddressLeavesOtherAddressesSigningIn() async throws {
        // A real scrypt cost (a quarter of production's, so the suite's other tests keep their
        // cores): the hashing threads are what a flood fights for.
        let api = try APIFixture(proxies: try TrustedProxies(parsing: "127.0.0.1/32"), hasher: PasswordHasher(parameters: .init(logN: 13, r: 8, p: 1)))
        _ = try await api.person(email: "yul@example.org")
        let (port, tenant) = (api.test.port, api.tenant)
        // Forty hashes of real cost queue on two hashing threads while the whole suite runs on
        // two cores (a debug build's scrypt): answers may take longer than the usual 10 s, and
        // this test is about who gets answered, not how fast (the latencies are printed).
        let patience = 120
        let flood = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<200 {
                    group.addTask {
                        try await Self.login(APIClient(port: port, receiveTimeoutSeconds: patience), ["tenant": tenant, "email": "nobody\(index)@example.org", "password": "guess"],
                                             from: "203.0.113.66").0
                    }
                }
                return try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
            }
        }
        var latencies: [Double] = []
        let client = try APIClient(port: port, receiveTimeoutSeconds: patience)
        for index in 0..<20 {
            let started = ContinuousClock.now
            let (status, _, _) = try await Self.login(client, ["tenant": tenant, "email": "yul@example.org", "password": "a long enough password"],
                                                      from: "198.51.100.\(index + 1)")
            latencies.append(Double((ContinuousClock.now - started).components.attoseconds) / 1e15
                             + Double((ContinuousClock.now - started).components.seconds) * 1000)
            #expect(status == 200)
        }
        let outcomes = try await flood.value
        latencies.sort()
        print("sign-in flood: 200 bad sign-ins from one address → \(outcomes.sorted { $0.key < $1.key }); another address's sign-ins "
              + "p50 \(Int(latencies[latencies.count / 2])) ms, p99 \(Int(latencies.last!)) ms")
        // The flood is throttled at its address: only the first 20 ever reach the password check.
        #expect(outcomes[401, default: 0] <= Credentials.failuresPerAddress)
        #expect(outcomes[401, default: 0] + outcomes[429, default: 0] + outcomes[503, default: 0] == 200)
        await api.stop()
    }

    @Test func trustedProxiesNameTheClientAndNothingElseDoes() throws {
        let proxies = try TrustedProxies(parsing: "10.0.0.0/8, ::1")
        #expect(proxies.client(peer: "10.1.2.3", forwardedFor: "198.51.100.7") == "198.51.100.7")
        // A client's own claim left of the proxy's entry is ignored.
        #expect(proxies.client(peer: "10.1.2.3", forwardedFor: "1.2.3.4, 198.51.100.7, 10.9.9.9") == "198.51.100.7")
        #expect(proxies.client(peer: "::1", forwardedFor: "2001:db8::5") == "2001:db8::5")
        // From an untrusted peer the header means nothing.
        #expect(proxies.client(peer: "192.0.2.1", forwardedFor: "198.51.100.7") == "192.0.2.1")
        #expect(TrustedProxies.none.client(peer: "10.1.2.3", forwardedFor: "198.51.100.7") == "10.1.2.3")
        #expect(proxies.client(peer: "10.1.2.3", forwardedFor: "not an address") == "10.1.2.3")
        #expect(TrustedProxies.throttleKey("2001:db8:aa:bb:1:2:3:4") == "2001:db8:aa:bb::/64")
        #expect(TrustedProxies.throttleKey("198.51.100.7") == "198.51.100.7")
        for bad in ["10.0.0.0/33", "example.org", "::1/129", "1.2.3.4/x"] {
            #expect(throws: ConfigurationError.self) { try TrustedProxies(parsing: bad) }
        }
    }

    @Test func theHashingGateServesAddressesInTurnAndRefusesTheFloodersNewestWhenFull() async throws {
        let gate = HashingGate(width: 1, maxWaiting: 3)
        final class Log: Sendable {
            let names = Mutex<[String]>([])
            let release = DispatchSemaphore(value: 0)
        }
        let log = Log()
        // The one hashing thread is busy until the test lets it go, as with a slow hash.
        let holder = Task { try await gate.run(address: "holder") { log.release.wait() } }
        func submit(_ name: String, _ address: String) -> Task<Bool, Never> {
            Task {
                do {
                    try await gate.run(address: address) { log.names.withLock { $0.append(name) } }
                    return true
                } catch {
                    return false
                }
            }
        }
        func waitUntil(_ count: Int) async throws {
            #expect(try await Poll.until(every: .milliseconds(2)) { gate.waitingCount >= count })
        }
        var flooder: [Task<Bool, Never>] = []
        for index in 1...3 {
            flooder.append(submit("f\(index)", "flooder"))
            try await waitUntil(index)
        }
        let other = submit("o1", "other")
        // The line was full: the flooder's newest waiter is refused to make room for the other address.
        let refused = await flooder[2].value
        #expect(!refused)
        try await waitUntil(3)
        log.release.signal()
        try await holder.value
        #expect(await other.value, "the other address was refused")
        let (first, second) = (await flooder[0].value, await flooder[1].value)
        #expect(first && second)
        // Round robin: the flooder's oldest, then the other address, not the whole flood first.
        #expect(log.names.withLock { $0 } == ["f1", "o1", "f2"])
    }
}
