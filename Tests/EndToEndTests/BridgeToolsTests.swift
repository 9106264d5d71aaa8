import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The tools people already run, reporting to a real `roost serve` as they are: PagerDuty's own
/// client library (PyPI `pagerduty`, its URL pointed at Roost) and a real Alertmanager
/// (Debian's `prometheus-alertmanager`) running examples/alertmanager/alertmanager.yml, the file
/// docs/BRIDGES.md gives. What they cause is read back through Roost's API.
@Suite(.enabled(if: TestDatabase.isConfigured && ProcessInfo.processInfo.environment["ROOST_TEST_PYTHON"] != nil, "needs the test database and ROOST_TEST_PYTHON (scripts/test sets both)"))
struct BridgeToolsTests {
    static let python = ProcessInfo.processInfo.environment["ROOST_TEST_PYTHON"]
    static let root = TestDatabase.migrationsDirectory.deletingLastPathComponent()
    static let alertmanager = "/usr/bin/prometheus-alertmanager"

    struct Stage {
        let serve: ServeProcess
        let api: APIClient
        let owner: String
        let group: String
        let key: String
        let hookPath: String
        var url: String { "http://127.0.0.1:\(serve.port)" }

        func alerts() async throws -> [[String: Any]] {
            try #require(try await api.call("GET", "/v1/groups/\(group)/alerts", token: owner).1["items"] as? [[String: Any]])
        }

        func alert(_ text: String) async throws -> [String: Any]? {
            try await alerts().first { $0["text"] as? String == text }?["alert"] as? [String: Any]
        }
    }

    static func stage() async throws -> Stage {
        let slug = "tools-\(UUID().uuidString.prefix(8).lowercased())"
        _ = try TenantStore().create(slug: slug, name: "Tools", registration: .open, on: TestDatabase.migratedConnection())
        let serve = try await ServeProcess(accessLog: true)
        let api = try APIClient(port: serve.port)
        let (_, registered) = try await api.call("POST", "/v1/auth/register", [
            "tenant": slug, "email": "ops@example.org", "password": "a long enough password", "display_name": "Ops",
        ])
        let owner = try #require(registered["token"] as? String)
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Estate"], token: owner).1["id"] as? String)
        let (_, created) = try await api.call("POST", "/v1/groups/\(group)/bridges", ["name": "Monitoring", "hook": true, "burst": 100], token: owner)
        return Stage(serve: serve, api: api, owner: owner, group: group, key: try #require(created["key"] as? String),
                     hookPath: try #require(created["hook_path"] as? String))
    }

    /// Runs scripts/lib/pagerduty_events.py (PagerDuty's client library); its exit status and output.
    static func pagerDuty(_ stage: Stage, key: String? = nil, _ arguments: String...) async throws -> (Int32, String) {
        let process = try RunningProcess(python!, [root.appendingPathComponent("scripts/lib/pagerduty_events.py").path, String(stage.serve.port), key ?? stage.key]
                                         + arguments, environment: ["PATH": "/usr/bin:/bin"])
        let status = await process.wait()
        return (status, process.output.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func pagerDutysClientLibraryTriggersAcknowledgesAndResolvesAndAHookSecretStaysOutOfTheLog() async throws {
        let stage = try await Self.stage()
        let (triggered, dedupKey) = try await Self.pagerDuty(stage, "trigger", "Smoke in the hall", "panel-1", "critical")
        #expect(triggered == 0 && dedupKey.count == 32, "\(dedupKey)")
        let alert = try #require(try await stage.alert("Smoke in the hall"))
        let details = try #require(alert["details"] as? [String: Any])
        #expect(alert["severity"] as? String == "red" && alert["status"] as? String == "open" && alert["dedup_key"] as? String == dedupKey)
        #expect(details["source"] as? String == "panel-1" && (details["custom_details"] as? [String: Any])?["zone"] as? String == "hall")
        #expect((details["links"] as? [[String: Any]])?.first?["href"] as? String == "https://example.org/camera/1")
        #expect(try await Self.pagerDuty(stage, "acknowledge", dedupKey) == (0, dedupKey))
        #expect(try await stage.alert("Smoke in the hall")?["status"] as? String == "open")
        #expect(try await Self.pagerDuty(stage, "resolve", dedupKey) == (0, dedupKey))
        #expect(try await stage.alert("Smoke in the hall")?["status"] as? String == "closed")
        // A key that is no bridge's: the library sees the refusal as one.
        let (forged, said) = try await Self.pagerDuty(stage, key: "rbk_" + String(repeating: "A", count: 64), "trigger", "Forged", "x", "critical")
        #expect(forged == 1 && said.contains("refused"), "\(said)")
        #expect(try await stage.alerts().count == 1)

        // A hook URL's secret appears in no log line, matched or not.
        #expect(try await stage.api.call("POST", stage.hookPath, ["action": "trigger", "dedup_key": "hook", "summary": "By hook"]).0 == 201)
        #expect(try await stage.api.call("POST", stage.hookPath + "/more", [:]).0 == 404)
        let unmatched = try #require(await stage.serve.process.waitForLine(containing: "/v1/bridge/hooks/[secret]"))
        #expect(unmatched.contains("\"status\":404"))
        let secret = String(stage.hookPath.dropFirst("/v1/bridge/hooks/".count))
        #expect(!stage.serve.process.output.contains(secret))
        stage.serve.process.signal(SIGTERM)
        #expect(await stage.serve.process.wait() == 0)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prometheus-alertmanager"), "needs Debian's prometheus-alertmanager"))
    func aRealAlertmanagerFiresAndResolvesThroughItsWebhookAndItsPagerDutyReceiver() async throws {
        let stage = try await Self.stage()
        let folder = NSTemporaryDirectory() + "roost-alertmanager-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // The very file docs/BRIDGES.md gives, its timings shortened to a second.
        let config = try String(contentsOf: Self.root.appendingPathComponent("examples/alertmanager/alertmanager.yml"), encoding: .utf8)
            .replacingOccurrences(of: "ROOST_URL", with: stage.url).replacingOccurrences(of: "ROOST_BRIDGE_KEY", with: stage.key)
            .replacingOccurrences(of: "group_wait: 10s", with: "group_wait: 1s").replacingOccurrences(of: "group_interval: 1m", with: "group_interval: 1s")
        #expect(config.contains("group_wait: 1s") && config.contains("group_interval: 1s"))
        try config.write(toFile: folder + "/alertmanager.yml", atomically: true, encoding: .utf8)
        let port = try #require(unusedLoopbackPort())
        let manager = try RunningProcess(Self.alertmanager, [
            "--config.file=\(folder)/alertmanager.yml", "--storage.path=\(folder)/data", "--web.listen-address=127.0.0.1:\(port)",
            "--cluster.listen-address=",
        ], environment: ["PATH": "/usr/bin:/bin"])
        defer { manager.signal(SIGTERM) }
        #expect(await manager.waitForLine(containing: "Listening") != nil, "\(manager.output)")

        func post(_ alerts: String) async -> String? {
            await offload {
                exchange(port, "POST /api/v2/alerts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         + "Content-Length: \(alerts.utf8.count)\r\nConnection: close\r\n\r\n\(alerts)")
            }
        }
        func alerts(endsAt: String?) -> String {
            let ends = endsAt.map { ",\"endsAt\":\"\($0)\"" } ?? ""
            return "[{\"labels\":{\"alertname\":\"GateOpen\",\"severity\":\"critical\",\"gate\":\"north\"},"
                + "\"annotations\":{\"summary\":\"North gate open\"}\(ends)},"
                + "{\"labels\":{\"alertname\":\"Smoke\",\"via\":\"pagerduty\"},\"annotations\":{\"summary\":\"Smoke in the hall\"}\(ends)}]"
        }
        #expect(await post(alerts(endsAt: nil))?.hasPrefix("HTTP/1.1 200") == true)
        // Alertmanager notifies when its group wait is over: whatever it sent is read back.
        let arrived = try await Poll.until(within: .seconds(120), every: .milliseconds(200)) { try await stage.alerts().count == 2 }
        let all = try await stage.alerts()
        #expect(arrived, "\(all) \(manager.output)")
        let gate = try #require(all.first { $0["text"] as? String == "North gate open" }?["alert"] as? [String: Any])
        #expect(gate["severity"] as? String == "red")
        #expect(((gate["details"] as? [String: Any])?["labels"] as? [String: Any])?["gate"] as? String == "north")
        // Through pagerduty_configs: one alert for the Alertmanager group, its text Alertmanager's description.
        let smoke = try #require(all.first { ($0["text"] as? String)?.contains("Smoke") == true }?["alert"] as? [String: Any], "\(all)")
        #expect(smoke["severity"] as? String == "red" && (smoke["dedup_key"] as? String)?.count == 64)

        let past = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-1))
        #expect(await post(alerts(endsAt: past))?.hasPrefix("HTTP/1.1 200") == true)
        let closed = try await Poll.until(within: .seconds(120), every: .milliseconds(200)) {
            try await stage.alerts().allSatisfy { ($0["alert"] as? [String: Any])?["status"] as? String == "closed" }
        }
        let after = try await stage.alerts()
        #expect(closed && after.count == 2, "\(after) \(manager.output)")
    }

    /// `--mqtt-listen` starts the MQTT listener beside HTTP, logs its port, and answers there.
    @Test func serveWithMQTTListenAnswersCONNECTOnItsOwnPort() async throws {
        let serve = try await ServeProcess(["--mqtt-listen", "127.0.0.1:0"])
        let line = try #require(await serve.process.waitForLine(containing: "\"msg\":\"mqtt listening\""))
        let entry = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let port = try #require((entry["port"] as? Int).flatMap { UInt16(exactly: $0) })
        let client = try TestClient(port: port)
        // CONNECT (3.1.1) with a password that is no bridge key: "bad user name or password", then closed.
        let name: [UInt8] = [0, 4] + Array("MQTT".utf8), id: [UInt8] = [0, 1, 0x78], user: [UInt8] = [0, 1, 0x75], key: [UInt8] = [0, 3] + Array("rbk".utf8)
        let body = name + [0x04, 0xC2, 0x00, 0x3C] + id + user + key
        client.send([0x10, UInt8(body.count)] + body)
        #expect(await offload { client.readSome() } == [0x20, 2, 0, 4])
        serve.process.signal(SIGTERM)
        #expect(await serve.process.wait() == 0)
    }
}
