import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// Roost's MQTT listener for bridges, on the API fixture's server and the real database, with
/// real clients: paho-mqtt (PyPI) and Debian's mosquitto running as a bridge with
/// examples/mosquitto/roost-bridge.conf, the file docs/BRIDGES.md gives; and raw packets for
/// what no good client sends.
@Suite(.enabled(if: TestDatabase.isConfigured && ProcessInfo.processInfo.environment["ROOST_TEST_PYTHON"] != nil,
                "needs TEST_DATABASE_URL and ROOST_TEST_PYTHON (scripts/test sets both)"))
struct MQTTBridgeTests {
    static let root = TestDatabase.migrationsDirectory.deletingLastPathComponent()

    struct Stage {
        let api: APIFixture
        let owner: String
        let group: String
        let key: String
        let bridge: String
        let mqtt: MQTTBridges
        let port: UInt16

        func alerts() async throws -> [[String: Any]] {
            try #require(try await api.call("GET", "/v1/groups/\(group)/alerts", token: owner).1["items"] as? [[String: Any]])
        }

        func stop() async {
            mqtt.stop()
            await api.stop()
        }
    }

    static func stage(_ bridge: [String: Any] = [:], limits: MQTTBridges.Limits = .init()) async throws -> Stage {
        let api = try APIFixture(stream: true)
        let (_, registered) = try await api.register(["email": "mqtt-\(UUID().uuidString.prefix(6))@example.org", "display_name": "Owner"])
        let owner = try #require(registered["token"] as? String)
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Cameras"], token: owner).1["id"] as? String)
        var body: [String: Any] = ["name": "Porch", "burst": 100]
        body.merge(bridge) { $1 }
        let (_, created) = try await api.call("POST", "/v1/groups/\(group)/bridges", body, token: owner)
        let mqtt = MQTTBridges(pool: api.pool, bridges: .announcingReturns(pool: api.pool), limits: limits, log: Log(level: .error))
        let port = try #require(try mqtt.start(.inet(host: "127.0.0.1", port: 0), on: api.test.server))
        return Stage(api: api, owner: owner, group: group, key: try #require(created["key"] as? String),
                     bridge: try #require((created["bridge"] as? [String: Any])?["id"] as? String), mqtt: mqtt, port: port)
    }

    /// scripts/lib/mqtt_client.py (paho-mqtt): its exit status and output.
    static func paho(_ arguments: String...) async throws -> (Int32, String) {
        let python = try #require(ProcessInfo.processInfo.environment["ROOST_TEST_PYTHON"])
        let process = try RunningProcess(python, [root.appendingPathComponent("scripts/lib/mqtt_client.py").path] + arguments,
                                         environment: ["PATH": "/usr/bin:/bin"])
        let status = await process.wait()
        return (status, process.output.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data((text.split(separator: "\n").last.map(String.init) ?? "").utf8)) as? [String: Any])
    }

    @Test func pahoAtQoS1HasItsPubackOnlyOnceTheAlertIsReadableAndABadPayloadIsRefusedInThePuback() async throws {
        let stage = try await Self.stage()
        let url = "http://127.0.0.1:\(stage.api.test.port)/v1/groups/\(stage.group)/alerts"
        let body = #"{"action":"trigger","dedup_key":"gate","summary":"Gate forced","severity":"red"}"#
        let (status, output) = try await Self.paho("publish", String(stage.port), stage.key, "roost/alerts", body, url, stage.owner)
        let result = try Self.json(output)
        #expect(status == 0 && result["connack"] as? String == "Success" && result["puback"] as? String == "Success", "\(output)")
        // Read by the client right after its PUBACK: the alert was committed first.
        let alerts = try #require(result["alerts"] as? [[String: Any]])
        #expect(alerts.count == 1 && alerts[0]["text"] as? String == "Gate forced")
        #expect((alerts[0]["alert"] as? [String: Any])?["severity"] as? String == "red")
        // MQTT 5 hears why a payload was refused, in its PUBACK; nothing is written.
        let (_, refused) = try await Self.paho("publish", String(stage.port), stage.key, "roost/alerts", "not json", url, stage.owner, "--v5")
        #expect(try Self.json(refused)["puback"] as? String == "Payload format invalid", "\(refused)")
        #expect(try await stage.alerts().count == 1)
        // A key that is no bridge's: refused at CONNECT.
        let (_, bad) = try await Self.paho("refused", String(stage.port), "rbk_" + String(repeating: "A", count: 64))
        #expect(try Self.json(bad)["failure"] as? Bool == true, "\(bad)")
        let metrics = stage.mqtt.renderMetrics()
        #expect(metrics.contains("roost_mqtt_publications_total{outcome=\"applied\"} 1\n") && metrics.contains("{outcome=\"invalid\"} 1\n"))
        #expect(metrics.contains("roost_mqtt_connections_total{outcome=\"bad_key\"} 1\n"), "\(metrics)")
        await stage.stop()
    }

    /// The owner's stream, resumed: where `bridge.offline` and `bridge.online` arrive.
    static func ownerStream(_ stage: Stage) async throws -> WebSocketTestClient {
        let stream = try await WebSocketTestClient.connect(port: stage.api.test.port, path: "/v1/stream", token: stage.owner)
        #expect(await stream.receiveJSON()?["type"] as? String == "ready")
        stream.sendText(#"{"type":"resume","cursors":{}}"#)
        #expect(await stream.receiveJSON()?["type"] as? String == "resumed")
        return stream
    }

    @Test func aWillMessageAnnouncesTheBridgeOfflineAndItsNextConnectionOnline() async throws {
        let stage = try await Self.stage()
        let stream = try await Self.ownerStream(stage)
        #expect(try await Self.paho("will", String(stage.port), stage.key) == (0, "dropped"))
        let offline = try #require(await stream.receiveJSON())
        #expect(offline["event"] as? String == "bridge.offline" && (offline["data"] as? [String: Any])?["bridge_id"] as? String == stage.bridge)
        // Connecting again is the bridge's word that it is back.
        let url = "http://127.0.0.1:\(stage.api.test.port)/v1/groups/\(stage.group)/alerts"
        _ = try await Self.paho("publish", String(stage.port), stage.key, "roost/alerts",
                                #"{"action":"resolve","dedup_key":"nothing"}"#, url, stage.owner)
        let online = try #require(await stream.receiveJSON())
        #expect(online["event"] as? String == "bridge.online")
        await stage.stop()
    }

    @Test func aKeepAliveThatRunsOutEndsTheConnectionAndAnnouncesTheBridgeOffline() async throws {
        let stage = try await Self.stage()
        let stream = try await Self.ownerStream(stage)
        // A keep-alive of one second and no will: silence for one and a half ends it.
        let client = try TestClient(port: stage.port)
        client.send(Raw.connect(key: stage.key, keepAlive: 1))
        #expect(await offload { client.readSome() } == [0x20, 2, 0, 0])
        #expect(await offload { client.readSome() } == [], "the server closes the connection")
        let offline = try #require(await stream.receiveJSON())
        #expect(offline["event"] as? String == "bridge.offline")
        #expect(stage.mqtt.renderMetrics().contains("{outcome=\"keep_alive_expired\"} 1\n"))
        await stage.stop()
    }

    @Test func whatNoGoodClientSendsIsRefusedAndTheListenerKeepsServing() async throws {
        var limits = MQTTBridges.Limits()
        limits.connectionsPerKey = 1
        let stage = try await Self.stage(limits: limits)
        func exchange(_ bytes: [UInt8]...) async throws -> [[UInt8]] {
            let client = try TestClient(port: stage.port, receiveTimeoutSeconds: 30)
            var answers: [[UInt8]] = []
            for packet in bytes { client.send(packet) }
            while let answer = await offload({ client.readSome() }), !answer.isEmpty { answers.append(answer) }
            return answers
        }
        // Each of the next four is a protocol error. No CONNECT first: closed without a word.
        #expect(try await exchange([0xC0, 0x00]) == [])
        // MQTT 3.1 (MQIsdp, level 3): CONNACK "unacceptable protocol version", then closed.
        #expect(try await exchange(Raw.packet(0x10, Raw.string("MQIsdp") + [0x03, 0x02, 0x00, 0x3C] + Raw.string("x"))) == [[0x20, 2, 0, 1]])
        // A wrong key: "bad user name or password".
        #expect(try await exchange(Raw.connect(key: "rbk_wrong")) == [[0x20, 2, 0, 4]])
        // QoS 2 (3.1.1): accepted, then closed at the PUBLISH; in 5.0 a DISCONNECT says why.
        #expect(try await exchange(Raw.connect(key: stage.key), Raw.packet(0x34, Raw.string("t") + [0, 1] + [0x7B, 0x7D])) == [[0x20, 2, 0, 0]])
        let v5 = try await exchange(Raw.connect(key: stage.key, level: 5), Raw.packet(0x34, Raw.string("t") + [0, 1, 0]))
        #expect(v5.joined().contains(0xE0) && Array(v5.joined()).firstRange(of: [0xE0]).map { v5.joined().dropFirst($0.lowerBound + 2).first } == 0x9B,
                "\(v5)")
        // Past the packet size limit, from the length alone.
        #expect(try await exchange(Raw.connect(key: stage.key), [0x30, 0x80, 0x80, 0x10]) == [[0x20, 2, 0, 0]])
        // SUBSCRIBE is refused (no broker here), and the connection goes on: a PINGREQ is answered.
        let client = try TestClient(port: stage.port)
        client.send(Raw.connect(key: stage.key) + Raw.packet(0x82, [0, 7] + Raw.string("frigate/#") + [1]) + [0xC0, 0])
        var answered: [UInt8] = []
        while answered.count < 4 + 5 + 2, let more = await offload({ client.readSome() }), !more.isEmpty { answered += more }
        #expect(answered == [0x20, 2, 0, 0, 0x90, 3, 0, 7, 0x80, 0xD0, 0])
        // A second connection of the same key past its limit (1 here): "server unavailable".
        #expect(try await exchange(Raw.connect(key: stage.key)) == [[0x20, 2, 0, 3]])
        let metrics = stage.mqtt.renderMetrics()
        for (outcome, count) in [("protocol_error", 4), ("packet_too_large", 1), ("bad_key", 1), ("too_many_for_key", 1)] {
            #expect(metrics.contains("roost_mqtt_connections_total{outcome=\"\(outcome)\"} \(count)\n"), "\(outcome): \(metrics)")
        }
        #expect(try await stage.alerts().isEmpty)
        await stage.stop()
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/mosquitto")
                   && FileManager.default.isExecutableFile(atPath: "/usr/bin/mosquitto_pub"), "needs Debian's mosquitto and mosquitto-clients"))
    func mosquittoBridgingFrigatesReviewsMakesOneAlertOfOverlappingDetectionsResolvedOnlyAtTheReviewsEnd() async throws {
        let stage = try await Self.stage(["profile": "frigate", "place": ["address": "4 Porch Lane"]])
        let folder = NSTemporaryDirectory() + "roost-mosquitto-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let local = try #require(unusedLoopbackPort())
        // The very file docs/BRIDGES.md gives, its local listener on a free port.
        let config = try String(contentsOf: Self.root.appendingPathComponent("examples/mosquitto/roost-bridge.conf"), encoding: .utf8)
            .replacingOccurrences(of: "listener 1883 127.0.0.1", with: "listener \(local) 127.0.0.1")
            .replacingOccurrences(of: "ROOST_MQTT_HOST", with: "127.0.0.1").replacingOccurrences(of: "ROOST_MQTT_PORT", with: String(stage.port))
            .replacingOccurrences(of: "ROOST_BRIDGE_KEY", with: stage.key)
        #expect(config.contains("listener \(local) "))
        try config.write(toFile: folder + "/mosquitto.conf", atomically: true, encoding: .utf8)
        let broker = try RunningProcess("/usr/sbin/mosquitto", ["-c", folder + "/mosquitto.conf"], environment: ["PATH": "/usr/bin:/bin"])
        defer { broker.signal(SIGTERM) }
        // The bridge is up when Roost holds its connection.
        let bridged = try await Poll.until(within: .seconds(60), every: .milliseconds(50)) {
            stage.mqtt.renderMetrics().contains("roost_mqtt_connections 1\n")
        }
        #expect(bridged, "\(broker.output)")

        func review(_ type: String, objects: [String]) async throws {
            let payload = #"{"type":"\#(type)","before":{},"after":{"id":"1732770000.1-ab12cd","camera":"porch","start_time":1732770000.1,"#
                + #""end_time":null,"severity":"alert","thumb_path":"/media/frigate/clips/review/thumb-porch.webp","#
                + #""data":{"detections":[],"objects":[\#(objects.map { "\"\($0)\"" }.joined(separator: ","))],"sub_labels":[],"zones":["front_door"],"audio":[]}}}"#
            let publisher = try RunningProcess("/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", String(local), "-q", "1",
                                                                          "-t", "frigate/reviews", "-m", payload], environment: ["PATH": "/usr/bin:/bin"])
            #expect(await publisher.wait() == 0, "\(publisher.output)")
        }
        func porch() async throws -> [String: Any]? {
            try await stage.alerts().first { ($0["text"] as? String)?.hasPrefix("porch:") == true }
        }
        // One person, then a second detection overlapping it (one review): one alert, counted.
        try await review("new", objects: ["person"])
        try await review("update", objects: ["person", "person"])
        let updated = try await Poll.until(within: .seconds(60), every: .milliseconds(50)) {
            (try await porch()?["alert"] as? [String: Any])?["repeat_count"] as? Int == 1
        }
        let alert = try #require(try await porch())
        #expect(updated && alert["text"] as? String == "porch: person in front_door\n4 Porch Lane", "\(alert)")
        let count = try await stage.alerts().count
        #expect((alert["alert"] as? [String: Any])?["status"] as? String == "open" && count == 1)
        // The first detection leaves, the review goes on: still open. Then the review ends.
        try await review("update", objects: ["person"])
        try await review("end", objects: ["person"])
        let closed = try await Poll.until(within: .seconds(60), every: .milliseconds(50)) {
            (try await porch()?["alert"] as? [String: Any])?["status"] as? String == "closed"
        }
        let after = try await stage.alerts()
        #expect(closed && after.count == 1)
        #expect((after.first?["alert"] as? [String: Any])?["repeat_count"] as? Int == 2)
        await stage.stop()
    }
}

/// The tests' MQTT packets (RoostTestSupport).
typealias Raw = MQTTTestPackets
