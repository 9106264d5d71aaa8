import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The example adapters in examples/, each run as its own process against a real `roost serve`:
/// webhooks go in, and the alerts they cause are read back through the API.
@Suite(.enabled(if: TestDatabase.isConfigured && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
                "needs the test database and /usr/bin/python3"))
struct BridgeExamplesTests {
    static let examples = TestDatabase.migrationsDirectory.deletingLastPathComponent().appendingPathComponent("examples")

    struct Stage {
        let serve: ServeProcess
        let api: APIClient
        let owner: String
        let group: String
    }

    static func stage(_ arguments: [String] = []) async throws -> Stage {
        let slug = "ex-\(UUID().uuidString.prefix(8).lowercased())"
        _ = try TenantStore().create(slug: slug, name: "Examples", registration: .open, on: TestDatabase.migratedConnection())
        let serve = try await ServeProcess(arguments)
        let api = try APIClient(port: serve.port)
        let (_, registered) = try await api.call("POST", "/v1/auth/register", [
            "tenant": slug, "email": "ha@example.org", "password": "a long enough password", "display_name": "Owner",
        ])
        let owner = try #require(registered["token"] as? String)
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Smart homes"], token: owner).1["id"] as? String)
        return Stage(serve: serve, api: api, owner: owner, group: group)
    }

    /// Starts an adapter on a free port; the process and its port.
    static func adapter(_ script: String, _ stage: Stage, key: String, secret: String?, extra: [String: String] = [:]) async throws
        -> (RunningProcess, UInt16)
    {
        // A queue of its own under the temporary folder, and short retries.
        let queue = NSTemporaryDirectory() + "roost-adapter-queue-\(UUID().uuidString)"
        var environment = ["PATH": "/usr/bin:/bin", "ROOST_URL": "http://127.0.0.1:\(stage.serve.port)", "ROOST_BRIDGE_KEY": key,
                           "ADAPTER_LISTEN": "127.0.0.1:0", "ROOST_QUEUE_DIR": queue, "ROOST_RETRY_MAX_S": "1"]
        if let secret { environment["ROOST_BRIDGE_SECRET"] = secret }
        environment.merge(extra) { $1 }
        let process = try RunningProcess("/usr/bin/python3", [examples.appendingPathComponent(script).path], environment: environment)
        guard let line = await process.waitForLine(containing: "listening"),
              let range = line.range(of: #""port": (\d+)"#, options: .regularExpression),
              let port = UInt16(line[range].split(separator: " ").last!) else {
            throw SubprocessError("\(script) did not start: \(process.output)")
        }
        return (process, port)
    }

    /// POSTs a webhook to an adapter (it closes each connection, so a fresh client each time).
    static func webhook(_ port: UInt16, _ body: [String: Any]) async throws -> Int {
        try await APIClient(port: port).call("POST", "/", body).0
    }

    static func alerts(_ stage: Stage) async throws -> [[String: Any]] {
        try #require(try await stage.api.call("GET", "/v1/groups/\(stage.group)/alerts", token: stage.owner).1["items"] as? [[String: Any]])
    }

    @Test func homeAssistantTriggeredRaisesOneAlertAndDisarmedResolvesIt() async throws {
        let stage = try await Self.stage()
        let (_, created) = try await stage.api.call("POST", "/v1/groups/\(stage.group)/bridges", ["name": "Home Assistant", "signing": true],
                                                    token: stage.owner)
        let (adapter, port) = try await Self.adapter("home-assistant/roost_ha_bridge.py", stage, key: try #require(created["key"] as? String),
                                                     secret: try #require(created["secret"] as? String))
        let triggered: [String: Any] = ["entity_id": "alarm_control_panel.home", "state": "triggered", "friendly_name": "Home", "zone": "hall"]
        #expect(try await Self.webhook(port, triggered) == 200)
        #expect(try await Self.webhook(port, triggered) == 200)  // the siren again: a repeat
        var alerts = try await Self.alerts(stage)
        let state = try #require(alerts.first?["alert"] as? [String: Any])
        #expect(alerts.count == 1 && alerts[0]["text"] as? String == "Home: alarm triggered")
        #expect(state["severity"] as? String == "red" && state["repeat_count"] as? Int == 1 && state["status"] as? String == "open")
        #expect((state["details"] as? [String: Any])?["zone"] as? String == "hall")
        #expect(try await Self.webhook(port, ["entity_id": "alarm_control_panel.home", "state": "armed_away"]) == 200)
        #expect(try await Self.webhook(port, ["entity_id": "alarm_control_panel.home", "state": "disarmed"]) == 200)
        alerts = try await Self.alerts(stage)
        #expect((alerts.first?["alert"] as? [String: Any])?["status"] as? String == "closed")
        #expect(try await Self.webhook(port, ["state": "triggered"]) == 400)
        adapter.signal(SIGTERM)
        _ = await adapter.wait()
        stage.serve.process.signal(SIGTERM)
        #expect(await stage.serve.process.wait() == 0)
    }

    @Test func cameraDetectionsRaiseAnAlertPerCameraAndLabelUntilTheyEnd() async throws {
        let stage = try await Self.stage()
        let (_, created) = try await stage.api.call("POST", "/v1/groups/\(stage.group)/bridges", ["name": "Frigate"], token: stage.owner)
        let (adapter, port) = try await Self.adapter("camera-webhook/roost_camera_bridge.py", stage, key: try #require(created["key"] as? String),
                                                     secret: nil, extra: ["CAMERA_LABELS": "person"])
        let after: [String: Any] = ["id": "1700000000.1-abc", "camera": "driveway", "label": "person", "score": 0.87]
        #expect(try await Self.webhook(port, ["type": "new", "before": after, "after": after]) == 200)
        #expect(try await Self.webhook(port, ["type": "update", "before": after, "after": after]) == 200)
        #expect(try await Self.webhook(port, ["camera": "garden", "label": "cat", "state": "start"]) == 200)  // not watched
        var alerts = try await Self.alerts(stage)
        #expect(alerts.count == 1 && alerts.first?["text"] as? String == "Person seen by driveway")
        #expect((alerts.first?["alert"] as? [String: Any])?["severity"] as? String == "amber")
        #expect(try await Self.webhook(port, ["type": "end", "before": after, "after": after]) == 200)
        #expect(try await Self.webhook(port, ["camera": "garden", "label": "person", "state": "start"]) == 200)
        alerts = try await Self.alerts(stage)
        let byText = Dictionary(uniqueKeysWithValues: alerts.compactMap { alert in
            (alert["text"] as? String).map { ($0, (alert["alert"] as? [String: Any])?["status"] as? String ?? "") }
        })
        #expect(byText == ["Person seen by driveway": "closed", "Person seen by garden": "open"])
        #expect(try await Self.webhook(port, ["something": "else"]) == 400)
        adapter.signal(SIGTERM)
        _ = await adapter.wait()
        stage.serve.process.signal(SIGTERM)
        #expect(await stage.serve.process.wait() == 0)
    }

    /// Roost is stopped, the panel triggers: Home Assistant hears a failure (503, queued), and
    /// the alarm arrives once Roost is back on its address. The adapter's heartbeats keep a
    /// bridge made with `heartbeat_s` seen while nothing happens.
    @Test func anAlarmRaisedWhileRoostIsStoppedArrivesWhenItIsBack() async throws {
        let port = try #require(unusedLoopbackPort())
        let stage = try await Self.stage(["--listen", "127.0.0.1:\(port)"])
        let (_, created) = try await stage.api.call("POST", "/v1/groups/\(stage.group)/bridges", ["name": "Home Assistant", "heartbeat_s": 60],
                                                    token: stage.owner)
        let queue = NSTemporaryDirectory() + "roost-outage-queue-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: queue) }
        let (adapter, adapterPort) = try await Self.adapter("home-assistant/roost_ha_bridge.py", stage, key: try #require(created["key"] as? String),
                                                            secret: nil, extra: ["ROOST_QUEUE_DIR": queue])
        let beat = try await Poll.until(within: .seconds(60), every: .milliseconds(50)) {
            let listed = try await stage.api.call("GET", "/v1/groups/\(stage.group)/bridges", token: stage.owner).1["items"] as? [[String: Any]]
            return listed?.first?["last_seen_at"] is String
        }
        #expect(beat, "the adapter's first heartbeat reached Roost")
        stage.serve.process.signal(SIGTERM)
        #expect(await stage.serve.process.wait() == 0)

        let triggered: [String: Any] = ["entity_id": "alarm_control_panel.home", "state": "triggered", "friendly_name": "Home \"North\""]
        #expect(try await Self.webhook(adapterPort, triggered) == 503)
        let queued = try FileManager.default.contentsOfDirectory(atPath: queue).filter { $0.hasSuffix(".json") }
        #expect(queued.count == 1, "the alarm waits on disk")

        let again = try await ServeProcess(["--listen", "127.0.0.1:\(port)"])
        let api = try APIClient(port: again.port)
        let arrived = try await Poll.until(within: .seconds(60), every: .milliseconds(100)) {
            (try await api.call("GET", "/v1/groups/\(stage.group)/alerts", token: stage.owner).1["items"] as? [[String: Any]])?.count == 1
        }
        let alerts = try #require(try await api.call("GET", "/v1/groups/\(stage.group)/alerts", token: stage.owner).1["items"] as? [[String: Any]])
        #expect(arrived && alerts.first?["text"] as? String == "Home \"North\": alarm triggered", "\(adapter.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: queue).filter { $0.hasSuffix(".json") }.isEmpty)
        adapter.signal(SIGTERM)
        _ = await adapter.wait()
        again.process.signal(SIGTERM)
        #expect(await again.process.wait() == 0)
    }

    /// With FRIGATE_URL, a detection's snapshot (served at Frigate's own path by Python's
    /// http.server, a photo drawn by Pillow) is uploaded and attached to its alert.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["ROOST_TEST_PYTHON"] != nil, "needs ROOST_TEST_PYTHON (Pillow)"))
    func aFrigateDetectionsSnapshotIsAttachedToItsAlert() async throws {
        let stage = try await Self.stage()
        let folder = NSTemporaryDirectory() + "roost-frigate-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let events = folder + "/frigate/api/events/1700000000.1-abc"
        try FileManager.default.createDirectory(atPath: events, withIntermediateDirectories: true)
        let made = try await Subprocess.run(try #require(ProcessInfo.processInfo.environment["ROOST_TEST_PYTHON"]),
                                            [Self.examples.deletingLastPathComponent().appendingPathComponent("scripts/lib/media_samples.py").path, "make", folder])
        let samples = try #require(try JSONSerialization.jsonObject(with: Data(made.output.utf8)) as? [String: [String: Any]], "\(made.output)")
        let jpeg = try #require(samples.values.first { $0["content_type"] as? String == "image/jpeg" }?["path"] as? String)
        try FileManager.default.copyItem(atPath: jpeg, toPath: events + "/snapshot.jpg")
        let port = try #require(unusedLoopbackPort())
        let frigate = try RunningProcess("/usr/bin/python3", ["-u", "-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", folder + "/frigate"],
                                         environment: ["PATH": "/usr/bin:/bin"])
        defer { frigate.signal(SIGTERM) }
        #expect(await frigate.waitForLine(containing: "Serving HTTP") != nil, "\(frigate.output)")
        let (_, created) = try await stage.api.call("POST", "/v1/groups/\(stage.group)/bridges", ["name": "Frigate"], token: stage.owner)
        let (adapter, adapterPort) = try await Self.adapter("camera-webhook/roost_camera_bridge.py", stage, key: try #require(created["key"] as? String),
                                                            secret: nil, extra: ["FRIGATE_URL": "http://127.0.0.1:\(port)"])
        let after: [String: Any] = ["id": "1700000000.1-abc", "camera": "driveway", "label": "person"]
        #expect(try await Self.webhook(adapterPort, ["type": "new", "before": after, "after": after]) == 200)
        let alert = try #require(try await Self.alerts(stage).first)
        let attachments = try #require(alert["attachments"] as? [[String: Any]], "\(alert)")
        #expect(attachments.count == 1 && attachments.first?["content_type"] as? String == "image/jpeg", "\(alert) \(adapter.output)")
        adapter.signal(SIGTERM)
        _ = await adapter.wait()
        stage.serve.process.signal(SIGTERM)
        #expect(await stage.serve.process.wait() == 0)
    }
}
