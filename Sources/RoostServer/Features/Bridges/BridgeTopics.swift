import Foundation
import RoostProtocol

/// How a bridge's MQTT publications become its events, by the bridge's `profile` (API.md
/// "Bridges, extended"; the table is in docs/BRIDGES.md):
/// - `frigate`: `…/reviews` is Frigate's review topic. A review of severity `alert` triggers
///   on `new`, repeats on `update` and resolves on `end`, keyed by the review's id, so
///   overlapping detections (one review) are one alert, resolved only when the review ends;
///   `detection` reviews and `…/available` are not alerts.
/// - `home_assistant`: an alarm panel's state topic: `triggered` is a red trigger keyed by the
///   topic, `disarmed` resolves it, other states are not alerts.
/// - any profile: a JSON object on any other topic is Roost's own bridge body.
enum BridgeTopics {
    enum Reading {
        case event(BridgeAlert)
        /// Not an alert (a state or topic the profile passes over); why.
        case ignored(String)
        /// Cannot be read; why.
        case invalid(String)
    }

    static func read(topic: String, payload: [UInt8], profile: String) -> Reading {
        if profile == "frigate" {
            if topic == "reviews" || topic.hasSuffix("/reviews") { return frigateReview(payload) }
            if topic.hasSuffix("/available") { return .ignored("Frigate's availability") }
        }
        if profile == "home_assistant", let state = plainState(payload) { return alarmPanel(topic: topic, state: state) }
        return roostBody(payload)
    }

    // MARK: - Frigate

    static func frigateReview(_ payload: [UInt8]) -> Reading {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any],
              let type = object["type"] as? String, let after = object["after"] as? [String: Any],
              let id = after["id"] as? String, !id.isEmpty else {
            return .invalid("not a Frigate review: {type, after: {id, camera, severity, data}}")
        }
        guard after["severity"] as? String == "alert" else { return .ignored("a Frigate review of severity \(after["severity"] ?? "none"), not alert") }
        let camera = after["camera"] as? String ?? "camera"
        let data = after["data"] as? [String: Any] ?? [:]
        let objects = (data["objects"] as? [String] ?? []).filter { !$0.isEmpty }
        let zones = (data["zones"] as? [String] ?? []).filter { !$0.isEmpty }
        var summary = "\(camera): " + (objects.isEmpty ? "activity" : Array(Set(objects)).sorted().joined(separator: ", "))
        if !zones.isEmpty { summary += " in " + Array(Set(zones)).sorted().joined(separator: ", ") }
        let dedupKey = "frigate:" + String(id.prefix(180))
        let details: [String: Any] = ["review_id": id, "camera": camera, "objects": objects, "zones": zones,
                                      "start_time": after["start_time"] ?? NSNull(), "thumb_path": after["thumb_path"] ?? NSNull()]
        switch type {
        case "new", "update":
            return event("trigger", dedupKey, summary: summary, severity: .amber, details: ToolDetails.bounded(details, cutting: "objects"))
        case "end":
            return event("resolve", dedupKey, summary: "\(camera): review ended", severity: nil, details: nil)
        default:
            return .invalid("a Frigate review of type \(type); new, update or end")
        }
    }

    // MARK: - Home Assistant

    /// A payload that is one word of text (an alarm panel's state), lower-cased.
    static func plainState(_ payload: [UInt8]) -> String? {
        guard payload.count <= 64, let text = String(validating: payload, as: UTF8.self) else { return nil }
        let word = text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        return !word.isEmpty && word.allSatisfy { $0.isLetter || $0 == "_" } ? word : nil
    }

    static func alarmPanel(topic: String, state: String) -> Reading {
        let parts = topic.split(separator: "/")
        let name = (parts.last == "state" && parts.count > 1 ? parts[parts.count - 2] : parts.last).map(String.init) ?? topic
        let dedupKey = "ha:" + String(topic.prefix(190))
        switch state {
        case "triggered":
            return event("trigger", dedupKey, summary: "\(name): alarm triggered", severity: .red,
                         details: ToolDetails.bounded(["topic": topic, "state": state], cutting: "topic"))
        case "disarmed":
            return event("resolve", dedupKey, summary: "\(name): disarmed", severity: nil, details: nil)
        default:
            return .ignored("alarm panel state \(state)")
        }
    }

    // MARK: - Roost's own body

    static func roostBody(_ payload: [UInt8]) -> Reading {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any] else {
            return .invalid("the payload is not Roost's bridge body (a JSON object with action and dedup_key)")
        }
        let known: Set<String> = ["action", "dedup_key", "summary", "severity", "location", "details", "occurred_at"]
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) { return .invalid("\(unknown) is not a field of Roost's bridge body") }
        var location: Location?
        if let place = object["location"] as? [String: Any] {
            guard let lat = (place["lat"] as? NSNumber)?.doubleValue, let lon = (place["lon"] as? NSNumber)?.doubleValue else {
                return .invalid("location needs lat and lon")
            }
            location = Location(lat: lat, lon: lon, accuracyM: (place["accuracy_m"] as? NSNumber)?.doubleValue)
        }
        do {
            return .event(try BridgeAlert(action: object["action"] as? String ?? "", dedupKey: object["dedup_key"] as? String ?? "",
                                          summary: object["summary"] as? String, severity: object["severity"] as? String,
                                          occurredAt: object["occurred_at"] as? String, location: location) { () throws(APIError) in
                try BridgeRoutes.details(payload)
            })
        } catch {
            return .invalid("\(error.field ?? "body"): \(error.message)")
        }
    }

    private static func event(_ action: String, _ dedupKey: String, summary: String?, severity: AlertSeverity?, details: String?) -> Reading {
        do {
            return .event(try BridgeAlert(action: action, dedupKey: dedupKey, summary: summary, severity: severity?.name, occurredAt: nil,
                                          location: nil) { details })
        } catch {
            return .invalid(error.message)
        }
    }
}
