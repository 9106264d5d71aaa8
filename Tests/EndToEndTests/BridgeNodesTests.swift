import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A bridge talking to two real nodes at once: triggers and resolves interleaved across them
/// keep the alerts consistent, and a key revoked on one node is refused on the other at once.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct BridgeNodesTests {
    /// A trigger or resolve of the one dedup_key this test uses.
    static func body(_ action: String) -> [String: Any] {
        action == "trigger" ? ["action": "trigger", "dedup_key": "zone-1", "summary": "Zone 1 alarm", "severity": "red"]
            : ["action": "resolve", "dedup_key": "zone-1"]
    }

    @Test func interleavedTriggersAndResolvesOnTwoNodesStayConsistentAndRevocationHoldsEverywhere() async throws {
        let slug = "bnodes-\(UUID().uuidString.prefix(8).lowercased())"
        _ = try TenantStore().create(slug: slug, name: "Bridge nodes", registration: .open, on: TestDatabase.migratedConnection())
        let a = try await ServeProcess()
        let b = try await ServeProcess()
        let onA = try APIClient(port: a.port)
        let (_, registered) = try await onA.call("POST", "/v1/auth/register", [
            "tenant": slug, "email": "panel@example.org", "password": "a long enough password", "display_name": "Owner",
        ])
        let owner = try #require(registered["token"] as? String)
        let group = try #require(try await onA.call("POST", "/v1/groups", ["name": "Two nodes"], token: owner).1["id"] as? String)
        let (_, created) = try await onA.call("POST", "/v1/groups/\(group)/bridges", ["name": "Panel", "burst": 500, "rate_per_minute": 6000],
                                              token: owner)
        let key = try #require(created["key"] as? String)
        let bridge = try #require((created["bridge"] as? [String: Any])?["id"] as? String)

        let trigger = Self.body("trigger")
        let resolve = Self.body("resolve")
        // Node A triggers; node B triggers and resolves; all at once.
        let (portA, portB) = (a.port, b.port)
        async let fromA: [(String, Int)] = {
            let client = try APIClient(port: portA)
            var answers: [(String, Int)] = []
            for _ in 0..<30 { answers.append(("trigger", try await client.call("POST", "/v1/bridge/alerts", Self.body("trigger"), token: key).0)) }
            return answers
        }()
        async let fromB: [(String, Int)] = {
            let client = try APIClient(port: portB)
            var answers: [(String, Int)] = []
            for index in 0..<45 {
                let action = index % 3 == 2 ? "resolve" : "trigger"
                answers.append((action, try await client.call("POST", "/v1/bridge/alerts", Self.body(action), token: key).0))
            }
            return answers
        }()
        let answers = try await fromA + fromB
        #expect(answers.allSatisfy { $0.1 < 500 }, "\(answers)")
        let triggersCreated = answers.filter { $0 == ("trigger", 201) }.count
        let triggersRepeated = answers.filter { $0 == ("trigger", 200) }.count
        #expect(triggersCreated + triggersRepeated == 60)
        #expect(answers.filter { $0.0 == "resolve" }.allSatisfy { $0.1 == 200 || $0.1 == 404 })
        // Finally resolve whatever is open: then nothing is.
        _ = try await onA.call("POST", "/v1/bridge/alerts", resolve, token: key)

        // The database agrees: one alert per 201, every repeat counted, at most one ever open.
        let setup = try TestDatabase.migratedConnection()
        let tenant = try #require(try TenantStore().find(slug: slug, on: setup)).id
        let (alerts, repeats, open) = try setup.withTenantTransaction(tenant) { connection in
            let row = try connection.query("""
                SELECT count(*) AS alerts, coalesce(sum(repeat_count), 0)::bigint AS repeats, count(*) FILTER (WHERE status = 'open') AS open
                FROM alerts WHERE bridge_id = \(UUID(uuidString: bridge)!)
                """).rows[0]
            return (try row.decode(Int.self, "alerts"), try row.decode(Int.self, "repeats"), try row.decode(Int.self, "open"))
        }
        #expect(alerts == triggersCreated && repeats == triggersRepeated && open == 0, "\(alerts) \(repeats) \(open)")

        // Revoked through node A, refused by node B on its next request.
        #expect(try await onA.call("DELETE", "/v1/groups/\(group)/bridges/\(bridge)", token: owner).0 == 204)
        #expect(try await APIClient(port: b.port).call("POST", "/v1/bridge/alerts", trigger, token: key).0 == 401)
        for node in [a, b] {
            node.process.signal(SIGTERM)
            #expect(await node.process.wait() == 0)
        }
    }
}
