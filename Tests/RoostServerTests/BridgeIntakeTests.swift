import Foundation
import RoostPersistence
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Testing

/// What a bridge knows about itself (place, arm state, cooldown), the keys of devices that
/// cannot set a Bearer header (Basic, the hook URL), and the PagerDuty and Alertmanager doors,
/// over real sockets and the real database. The real PagerDuty client and Alertmanager are in
/// EndToEndTests' BridgeToolsTests.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct BridgeIntakeTests {
    let bridges = BridgeTests()

    func alerts(_ setup: BridgeTests.Setup) async throws -> [[String: Any]] {
        try #require(try await setup.api.call("GET", "/v1/groups/\(setup.group)/alerts", token: setup.owner).1["items"] as? [[String: Any]])
    }

    @Test func aPlacedBridgeNamesItsHouseADisarmedOnePagesNobodyAndACooldownCountsRetriggers() async throws {
        let setup = try await bridges.setup()
        let api = setup.api
        let place: [String: Any] = ["address": "12 Elm Street", "location": ["lat": 55.68, "lon": 12.57]]
        let (key, _, id) = try await bridges.bridge(setup, ["place": place, "cooldown_s": 600])
        #expect(try await api.call("POST", "/v1/me/devices", ["platform": "fcm", "token": "owner-phone"], token: setup.owner).0 == 201)
        func pushed(_ seq: Int?) async throws -> Int {
            let seq = try #require(seq)
            return try await api.inTenant { _, connection in
                try connection.query("SELECT count(*)::int AS n FROM alert_recipients WHERE seq = \(Int64(seq))").rows[0].decode(Int.self, "n")
            }
        }
        let (_, first) = try await api.call("POST", "/v1/bridge/alerts", BridgeTests.trigger("door", summary: "Home Alarm: alarm triggered"), token: key)
        #expect(first["text"] as? String == "Home Alarm: alarm triggered\n12 Elm Street")
        #expect((first["location"] as? [String: Any])?["lat"] as? Double == 55.68)
        #expect((first["alert"] as? [String: Any])?["severity"] as? String == "red")
        #expect(try await pushed(first["seq"] as? Int) == 1)
        // Resolved, then the siren again within the cooldown: the same alert counts it, nothing new is raised.
        #expect(try await api.call("POST", "/v1/bridge/alerts", ["action": "resolve", "dedup_key": "door"], token: key).0 == 200)
        let (again, repeated) = try await api.call("POST", "/v1/bridge/alerts", BridgeTests.trigger("door"), token: key)
        #expect(again == 200 && repeated["seq"] as? Int == first["seq"] as? Int)
        #expect((repeated["alert"] as? [String: Any])?["repeat_count"] as? Int == 1)
        // Another dedup family is not held back by this one's cooldown.
        #expect(try await api.call("POST", "/v1/bridge/alerts", BridgeTests.trigger("garage"), token: key).0 == 201)

        // Disarmed (and the place and cooldown removed): recorded as information, no push queued.
        let (patched, view) = try await api.call("PATCH", "/v1/groups/\(setup.group)/bridges/\(id)",
                                                 ["arm": "disarmed", "place": NSNull(), "cooldown_s": NSNull()], token: setup.owner)
        #expect(patched == 200 && view["arm"] as? String == "disarmed" && view["place"] is NSNull && view["cooldown_s"] is NSNull)
        let (_, quiet) = try await api.call("POST", "/v1/bridge/alerts", BridgeTests.trigger("camera", summary: "Person at the gate"), token: key)
        #expect(quiet["text"] as? String == "Person at the gate")
        #expect((quiet["alert"] as? [String: Any])?["severity"] as? String == "info")
        #expect(try await pushed(quiet["seq"] as? Int) == 0)
        let audit = try #require(try await api.call("GET", "/v1/groups/\(setup.group)/audit", token: setup.owner).1["items"] as? [[String: Any]])
        #expect(audit.contains { $0["action"] as? String == "bridge.changed" })

        // Refusals name their field and change nothing.
        for (body, field) in [(["arm": "sometimes"], "arm"), (["cooldown_s": 5], "cooldown_s"), (["profile": "zigbee"], "profile"),
                              (["place": [String: Any]()], "place"), (["place": ["location": ["lat": 91, "lon": 0]]], "place.location.lat")]
            as [([String: Any], String)] {
            let (status, error) = try await api.call("PATCH", "/v1/groups/\(setup.group)/bridges/\(id)", body, token: setup.owner)
            #expect(status == 400 && (error["error"] as? [String: Any])?["field"] as? String == field, "\(body): \(error)")
        }
        let listed = try #require(try await api.call("GET", "/v1/groups/\(setup.group)/bridges", token: setup.owner).1["items"] as? [[String: Any]])
        #expect(listed.first?["arm"] as? String == "disarmed" && listed.first?["profile"] as? String == "roost")
        await api.stop()
    }

    @Test func aBridgeOnAScheduleIsArmedInsideItsDailyWindowAndDisarmedOutside() async throws {
        let setup = try await bridges.setup()
        let api = setup.api
        // Windows around this minute in Copenhagen's local time: one holding it, one an hour later.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Europe/Copenhagen")!
        let parts = calendar.dateComponents([.hour, .minute], from: Date())
        let now = (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
        func clock(_ minute: Int) -> String { String(format: "%02d:%02d", ((minute % 1440) + 1440) % 1440 / 60, ((minute % 1440) + 1440) % 60) }
        let holding: [String: Any] = ["from": clock(now - 60), "until": clock(now + 60), "time_zone": "Europe/Copenhagen"]
        let (key, _, id) = try await bridges.bridge(setup, ["arm": "schedule", "schedule": holding])
        let (_, inside) = try await api.call("POST", "/v1/bridge/alerts", BridgeTests.trigger("night"), token: key)
        #expect((inside["alert"] as? [String: Any])?["severity"] as? String == "red", "\(inside)")
        let later: [String: Any] = ["from": clock(now + 60), "until": clock(now + 120), "time_zone": "Europe/Copenhagen"]
        let (patched, view) = try await api.call("PATCH", "/v1/groups/\(setup.group)/bridges/\(id)", ["arm": "schedule", "schedule": later],
                                                 token: setup.owner)
        #expect(patched == 200 && view["arm"] as? String == "schedule" && (view["schedule"] as? [String: Any])?["from"] as? String == clock(now + 60))
        let (_, outside) = try await api.call("POST", "/v1/bridge/alerts", BridgeTests.trigger("day"), token: key)
        #expect((outside["alert"] as? [String: Any])?["severity"] as? String == "info", "\(outside)")
        // Armed by hand again: the schedule goes.
        let (_, armed) = try await api.call("PATCH", "/v1/groups/\(setup.group)/bridges/\(id)", ["arm": "armed"], token: setup.owner)
        #expect(armed["arm"] as? String == "armed" && armed["schedule"] is NSNull)
        for (body, field) in [(["arm": "schedule"], "schedule"), (["schedule": holding], "schedule"),
                              (["arm": "schedule", "schedule": ["from": "22:00", "until": "22:00", "time_zone": "UTC"]], "schedule"),
                              (["arm": "schedule", "schedule": ["from": "22:00", "until": "06:00", "time_zone": "Mars/Olympus"]], "schedule.time_zone"),
                              (["arm": "disarmed", "schedule": holding], "schedule")] as [([String: Any], String)] {
            let (status, error) = try await api.call("PATCH", "/v1/groups/\(setup.group)/bridges/\(id)", body, token: setup.owner)
            #expect(status == 400 && (error["error"] as? [String: Any])?["field"] as? String == field, "\(body): \(error)")
        }
        await api.stop()
    }

    @Test func aDeviceWithoutHeadersPostsByBasicOrByItsHookURL() async throws {
        let setup = try await bridges.setup()
        let api = setup.api
        let (status, created) = try await api.call("POST", "/v1/groups/\(setup.group)/bridges", ["name": "NVR", "hook": true], token: setup.owner)
        let key = try #require(created["key"] as? String)
        let hook = try #require(created["hook_path"] as? String)
        #expect(status == 201 && hook.hasPrefix("/v1/bridge/hooks/rbh_") && (created["bridge"] as? [String: Any])?["hook"] as? Bool == true)
        let basic = "Basic " + Data("nvr:\(key)".utf8).base64EncodedString()
        #expect(try await api.call("POST", "/v1/bridge/alerts", BridgeTests.trigger("basic"), headers: ["Authorization": basic]).0 == 201)
        let wrong = "Basic " + Data("nvr:rbk_nothing".utf8).base64EncodedString()
        let (refused, error) = try await api.call("POST", "/v1/bridge/alerts", BridgeTests.trigger("basic"), headers: ["Authorization": wrong])
        #expect(refused == 401 && (error["error"] as? [String: Any])?["code"] as? String == "unauthenticated")
        #expect(try await api.call("POST", hook, BridgeTests.trigger("hook")).0 == 201)
        // A hook secret of the wrong kind, or altered, admits nothing.
        #expect(try await api.call("POST", "/v1/bridge/hooks/" + key, BridgeTests.trigger("hook2")).0 == 401)
        #expect(try await api.call("POST", String(hook.dropLast(2)) + "AA", BridgeTests.trigger("hook2")).0 == 401)
        #expect(try await api.call("GET", hook).0 == 405)
        #expect(try await alerts(setup).count == 2)
        await api.stop()
    }

    @Test func pagerDutyEventsTriggerAcknowledgeAndResolveAndBadOnesGetPagerDutysErrorShape() async throws {
        let setup = try await bridges.setup()
        let api = setup.api
        let (key, _, _) = try await bridges.bridge(setup)
        let trigger: [String: Any] = [
            "routing_key": key, "event_action": "trigger", "client": "Grafana",
            "payload": ["summary": "Disk full on nas", "source": "nas.local", "severity": "warning", "component": "disk",
                        "custom_details": ["free": "0 B"]],
            "links": [["href": "https://grafana.example/d/1", "text": "Dashboard"]],
        ]
        let (accepted, answer) = try await api.call("POST", "/v2/enqueue", trigger)
        #expect(accepted == 202 && answer["status"] as? String == "success" && answer["message"] as? String == "Event processed")
        let dedupKey = try #require(answer["dedup_key"] as? String)
        #expect(dedupKey.count == 32)
        var alerts = try await alerts(setup)
        let state = try #require(alerts.first?["alert"] as? [String: Any])
        #expect(alerts.count == 1 && alerts[0]["text"] as? String == "Disk full on nas" && state["severity"] as? String == "amber")
        let details = try #require(state["details"] as? [String: Any])
        #expect(details["source"] as? String == "nas.local" && details["client"] as? String == "Grafana")
        #expect((details["custom_details"] as? [String: Any])?["free"] as? String == "0 B" && (details["links"] as? [Any])?.count == 1)

        for action in ["acknowledge", "resolve"] {
            let (status, body) = try await api.call("POST", "/v1/bridge/pagerduty", ["routing_key": key, "event_action": action, "dedup_key": dedupKey])
            #expect(status == 202 && body["dedup_key"] as? String == dedupKey)
        }
        alerts = try await self.alerts(setup)
        #expect((alerts.first?["alert"] as? [String: Any])?["status"] as? String == "closed")
        // Resolving what is not open is processed, as PagerDuty does.
        #expect(try await api.call("POST", "/v2/enqueue", ["routing_key": key, "event_action": "resolve", "dedup_key": "nothing"]).0 == 202)

        // Too much custom_details: cut, with a note, rather than refused.
        var large = trigger
        large["dedup_key"] = "large"
        large["payload"] = ["summary": "Big", "source": "s", "severity": "critical", "custom_details": ["log": String(repeating: "x\"", count: 20_000)]]
        #expect(try await api.call("POST", "/v2/enqueue", large).0 == 202)
        let big = try #require(try await self.alerts(setup).first { $0["text"] as? String == "Big" }?["alert"] as? [String: Any])
        let cut = try #require((big["details"] as? [String: Any])?["custom_details_cut"] as? [String: Any])
        #expect(big["severity"] as? String == "red" && (cut["note"] as? String)?.contains("Roost keeps 16384 bytes") == true)

        let before = try await self.alerts(setup).count
        let refusals: [([String: Any], String)] = [
            (["event_action": "trigger", "payload": ["summary": "x", "source": "y", "severity": "info"]], "'routing_key' is missing or blank"),
            (["routing_key": key, "event_action": "snooze", "dedup_key": "a"], "'event_action' must be trigger, acknowledge or resolve"),
            (["routing_key": key, "event_action": "resolve"], "'dedup_key' is required to resolve"),
            (["routing_key": key, "event_action": "trigger", "payload": ["summary": "x", "source": "y", "severity": "fatal"]],
             "'payload.severity' must be critical, error, warning or info"),
            (["routing_key": key, "event_action": "trigger", "payload": ["summary": " ", "source": "y", "severity": "info"]],
             "'payload.summary' is missing or blank"),
        ]
        for (body, message) in refusals {
            let (status, error) = try await api.call("POST", "/v2/enqueue", body)
            #expect(status == 400 && error["status"] as? String == "invalid event", "\(body)")
            #expect((error["errors"] as? [String])?.contains(message) == true, "\(error)")
        }
        let (forged, error) = try await api.call("POST", "/v2/enqueue", ["routing_key": "rbk_forged", "event_action": "resolve", "dedup_key": "a"])
        #expect(forged == 401 && error["status"] as? String == "invalid event")
        #expect(try await self.alerts(setup).count == before)
        await api.stop()
    }

    @Test func anAlertmanagerNotificationTriggersAndResolvesEachAlertByFingerprint() async throws {
        let setup = try await bridges.setup()
        let api = setup.api
        let (key, _, _) = try await bridges.bridge(setup)
        func alert(_ fingerprint: String, _ status: String, _ labels: [String: String], summary: String? = nil) -> [String: Any] {
            ["status": status, "labels": labels, "annotations": summary.map { ["summary": $0] } ?? [:], "fingerprint": fingerprint,
             "startsAt": "2026-11-28T06:00:00Z", "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "http://prometheus/graph"]
        }
        func notification(_ alerts: [[String: Any]], version: String = "4") -> [String: Any] {
            ["version": version, "status": "firing", "receiver": "roost", "groupKey": "{}:{}", "truncatedAlerts": 0, "groupLabels": [:],
             "commonLabels": [:], "commonAnnotations": [:], "externalURL": "http://alertmanager", "alerts": alerts]
        }
        let firing = notification([alert("aa01", "firing", ["alertname": "GateOpen", "severity": "critical", "gate": "north"]),
                                   alert("bb02", "firing", ["alertname": "Flood"], summary: "Water in the cellar")])
        let (status, counts) = try await api.call("POST", "/v1/bridge/alertmanager", firing, token: key)
        #expect(status == 200 && counts["triggered"] as? Int == 2 && counts["resolved"] as? Int == 0)
        var alerts = try await alerts(setup)
        #expect(Set(alerts.compactMap { $0["text"] as? String }) == ["GateOpen: gate=north", "Water in the cellar"])
        #expect(alerts.first { $0["text"] as? String == "GateOpen: gate=north" }.flatMap { ($0["alert"] as? [String: Any])?["severity"] as? String } == "red")
        // Sent again at the repeat interval: repeats, not new alerts; then one resolves.
        #expect(try await api.call("POST", "/v1/bridge/alertmanager", firing, token: key).1["triggered"] as? Int == 2)
        let resolved = notification([alert("aa01", "resolved", ["alertname": "GateOpen"])])
        #expect(try await api.call("POST", "/v1/bridge/alertmanager", resolved, token: key).1["resolved"] as? Int == 1)
        alerts = try await self.alerts(setup)
        #expect(alerts.count == 2 && alerts.filter { ($0["alert"] as? [String: Any])?["status"] as? String == "open" }.count == 1)

        for (body, field) in [(notification([], version: "3"), "version"), (["alerts": "none", "version": "4"], "alerts"),
                              (notification([alert("", "firing", [:])]), "alerts[0].fingerprint"),
                              (notification([alert("cc03", "firing", [:]), alert("dd04", "pending", [:])]), "alerts[1].status")]
            as [([String: Any], String)] {
            let (refused, error) = try await api.call("POST", "/v1/bridge/alertmanager", body, token: key)
            #expect(refused == 400 && (error["error"] as? [String: Any])?["field"] as? String == field, "\(error)")
        }
        // Nothing of a refused notification was written, not even its valid first alert.
        #expect(try await self.alerts(setup).count == 2)
        #expect(try await api.call("POST", "/v1/bridge/alertmanager", firing).0 == 401)
        await api.stop()
    }
}
