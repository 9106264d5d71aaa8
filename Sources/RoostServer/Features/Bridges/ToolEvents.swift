import Foundation
import RoostProtocol

/// A PagerDuty Events API v2 event (`POST /v2/enqueue`), read as PagerDuty reads it, so that
/// anything that speaks PagerDuty (Grafana, Zabbix, Uptime Kuma, Alertmanager's
/// `pagerduty_configs`, the `pagerduty` client libraries) reports to Roost by changing its URL.
/// `routing_key` is a bridge key. `acknowledge` is accepted and changes nothing: in Roost the
/// street's people answer an alert, not the tool that raised it.
struct PagerDutyEvent {
    enum Action: String { case trigger, acknowledge, resolve }

    /// What PagerDuty answers for an event it cannot take: a list of what is wrong.
    struct Invalid: Error {
        let errors: [String]
        init(_ errors: String...) { self.errors = errors }
        init(errors: [String]) { self.errors = errors }
    }

    /// PagerDuty's own limit on `payload.summary`; a longer one is cut, as PagerDuty does.
    static let maxSummary = 1024
    static let maxDedupKey = 200

    let routingKey: String
    let action: Action
    let dedupKey: String
    /// The trigger or resolve; nil for an acknowledge.
    let alert: BridgeAlert?

    init(_ body: [UInt8]) throws(Invalid) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw Invalid("the body must be a JSON object")
        }
        var errors: [String] = []
        let routingKey = object["routing_key"] as? String ?? ""
        if routingKey.isEmpty { errors.append("'routing_key' is missing or blank") }
        let action = (object["event_action"] as? String).flatMap(Action.init)
        if action == nil { errors.append("'event_action' must be trigger, acknowledge or resolve") }
        var dedupKey = object["dedup_key"] as? String
        if object["dedup_key"] != nil && !(object["dedup_key"] is NSNull) && dedupKey == nil { errors.append("'dedup_key' must be a string") }
        if let key = dedupKey, key.isEmpty || key.count > Self.maxDedupKey {
            errors.append("'dedup_key' must be 1 to \(Self.maxDedupKey) characters")
        }
        if action != nil && action != .trigger && dedupKey == nil { errors.append("'dedup_key' is required to \(action!.rawValue)") }
        let payload = object["payload"] as? [String: Any]
        if action == .trigger {
            if payload == nil { errors.append("'payload' is missing or not an object") }
            for field in ["summary", "source"] where ((payload?[field] as? String) ?? "").trimmingCharacters(in: .whitespaces).isEmpty {
                errors.append("'payload.\(field)' is missing or blank")
            }
            if Self.severity(payload?["severity"] as? String) == nil {
                errors.append("'payload.severity' must be critical, error, warning or info")
            }
        }
        guard errors.isEmpty, let action else { throw Invalid(errors: errors) }
        dedupKey = dedupKey ?? UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        self.routingKey = routingKey
        self.action = action
        self.dedupKey = dedupKey!
        switch action {
        case .acknowledge:
            alert = nil
        case .resolve:
            alert = try Self.bridgeAlert("resolve", dedupKey: self.dedupKey, summary: nil, severity: nil, details: nil)
        case .trigger:
            let payload = payload!
            var details: [String: Any] = [:]
            for key in ["source", "component", "group", "class", "timestamp"] { details[key] = payload[key] as? String }
            details["custom_details"] = payload["custom_details"]
            for key in ["client", "client_url"] { details[key] = object[key] as? String }
            details["links"] = (object["links"] as? [Any]).map { Array($0.prefix(10)) }
            details["images"] = (object["images"] as? [Any]).map { Array($0.prefix(10)) }
            let summary = String((payload["summary"] as! String).prefix(Self.maxSummary))
            alert = try Self.bridgeAlert("trigger", dedupKey: self.dedupKey, summary: summary,
                                         severity: Self.severity(payload["severity"] as? String), details: ToolDetails.bounded(details, cutting: "custom_details"))
        }
    }

    /// PagerDuty's severities as Roost's: critical and error are red, warning amber, info information.
    static func severity(_ name: String?) -> AlertSeverity? {
        switch name {
        case "critical", "error": .red
        case "warning": .amber
        case "info": .info
        default: nil
        }
    }

    private static func bridgeAlert(_ action: String, dedupKey: String, summary: String?, severity: AlertSeverity?, details: String?)
        throws(Invalid) -> BridgeAlert
    {
        do {
            return try BridgeAlert(action: action, dedupKey: dedupKey, summary: summary, severity: severity?.name, occurredAt: nil, location: nil) { details }
        } catch {
            throw Invalid("'\(error.field ?? "event")': \(error.message)")
        }
    }

    /// 202, as PagerDuty answers an event it took.
    static func accepted(_ dedupKey: String) -> HTTPResponse {
        .json(.accepted, Array("{\"status\":\"success\",\"message\":\"Event processed\",\"dedup_key\":\(JSONString.quote(dedupKey))}".utf8))
    }

    /// PagerDuty's answer to an event it cannot take (400), or to a refusal of Roost's: a
    /// rate limit is PagerDuty's 429 "throttle event", anything else keeps its status with
    /// PagerDuty's shape.
    static func refusal(_ invalid: Invalid) -> HTTPResponse {
        let errors = invalid.errors.map(JSONString.quote).joined(separator: ",")
        return .json(.badRequest, Array("{\"status\":\"invalid event\",\"message\":\"Event object is invalid\",\"errors\":[\(errors)]}".utf8))
    }

    static func refusal(_ error: APIError) -> HTTPResponse {
        let status = error.status == .tooManyRequests ? "throttle event" : "invalid event"
        var response = HTTPResponse.json(error.status, Array("{\"status\":\"\(status)\",\"message\":\(JSONString.quote(error.message)),\"errors\":[\(JSONString.quote(error.message))]}".utf8))
        if let retry = error.headers["Retry-After"] { response.headers.replace("Retry-After", retry) }
        return response
    }
}

/// An Alertmanager webhook (`POST /v1/bridge/alertmanager`, payload version 4): each alert of
/// the notification is a trigger (`firing`) or a resolve (`resolved`) keyed by its
/// fingerprint, its text `annotations.summary` (else the alert's name and labels), its
/// severity from the `severity` label.
struct AlertmanagerNotification {
    /// More alerts than this in one notification are refused (Alertmanager's `max_alerts` cuts them).
    static let maxAlerts = 200

    let alerts: [BridgeAlert]

    init(_ body: [UInt8]) throws(APIError) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw APIError(.badRequest, code: .invalidJSON, message: "the body must be a JSON object: an Alertmanager webhook notification")
        }
        guard object["version"] as? String == "4" else {
            throw APIError.invalid("version must be \"4\" (Alertmanager's webhook payload version 4)", "version")
        }
        guard let alerts = object["alerts"] as? [[String: Any]] else { throw APIError.invalid("alerts must be a list of alerts", "alerts") }
        guard alerts.count <= Self.maxAlerts else {
            throw APIError.invalid("at most \(Self.maxAlerts) alerts a notification (set max_alerts in the receiver)", "alerts")
        }
        var parsed: [BridgeAlert] = []
        for (index, alert) in alerts.enumerated() {
            let field = "alerts[\(index)]"
            let labels = alert["labels"] as? [String: Any] ?? [:], annotations = alert["annotations"] as? [String: Any] ?? [:]
            guard let fingerprint = alert["fingerprint"] as? String, !fingerprint.isEmpty else {
                throw APIError.invalid("each alert needs its fingerprint", field + ".fingerprint")
            }
            let action: String
            switch alert["status"] as? String {
            case "firing": action = "trigger"
            case "resolved": action = "resolve"
            default: throw APIError.invalid("status must be firing or resolved", field + ".status")
            }
            var details: [String: Any] = ["labels": labels, "annotations": annotations]
            for key in ["startsAt", "generatorURL"] { details[key] = alert[key] as? String }
            details["externalURL"] = object["externalURL"] as? String
            do {
                parsed.append(try BridgeAlert(action: action, dedupKey: fingerprint, summary: action == "trigger" ? Self.summary(labels, annotations) : nil,
                                              severity: Self.severity(labels["severity"] as? String).name, occurredAt: nil, location: nil) {
                    ToolDetails.bounded(details, cutting: "annotations")
                })
            } catch {
                throw APIError.invalid(error.message, field + "." + (error.field ?? "alert"))
            }
        }
        self.alerts = parsed
    }

    static func summary(_ labels: [String: Any], _ annotations: [String: Any]) -> String {
        if let summary = annotations["summary"] as? String, !summary.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            return String(summary.prefix(1000))
        }
        let name = labels["alertname"] as? String ?? "alert"
        let rest = labels.filter { $0.key != "alertname" && $0.key != "severity" }.sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
        return String((rest.isEmpty ? name : "\(name): \(rest)").prefix(1000))
    }

    /// critical, page and error are red; warning amber; info and none information; no label amber.
    static func severity(_ label: String?) -> AlertSeverity {
        switch label?.lowercased() {
        case "critical", "page", "error": .red
        case "info", "none": .info
        default: .amber
        }
    }
}

/// What a tool sent beside its alert, kept in the alert's `details` (at most
/// `BridgeRoutes.maxDetailsBytes` of JSON): too large, the field named is cut to a note and
/// the start of its JSON, rather than the alert refused.
enum ToolDetails {
    static func bounded(_ details: [String: Any], cutting field: String) -> String? {
        let limit = BridgeRoutes.maxDetailsBytes
        var details = details
        guard let data = try? JSONSerialization.data(withJSONObject: details, options: [.sortedKeys]) else { return nil }
        guard data.count > limit else { return String(decoding: data, as: UTF8.self) }
        let original = (details[field]).flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys, .fragmentsAllowed]) }
        details[field] = nil
        details["links"] = nil
        details["images"] = nil
        let rest = (try? JSONSerialization.data(withJSONObject: details))?.count ?? limit
        // Halved: the start is JSON text, and each quote in it is escaped again.
        let room = max(0, (limit - rest - 400) / 2)
        let note = "cut: \(field) was \(original?.count ?? 0) bytes of JSON, and Roost keeps \(limit) bytes of details an alert"
        details["\(field)_cut"] = ["note": note, "start": String(decoding: (original ?? Data()).prefix(room), as: UTF8.self)]
        guard let cut = try? JSONSerialization.data(withJSONObject: details, options: [.sortedKeys]), cut.count <= limit else { return nil }
        return String(decoding: cut, as: UTF8.self)
    }
}
