import Foundation
import RoostPersistence
import RoostProtocol

/// What one CAP message means for one group that takes warnings (API.md "Group areas and
/// CAP"): decided from the message, the group and the time alone, so each rule is tested with
/// no database.
enum WarningDecision: Equatable {
    /// A new alert in the group.
    case raise(WarningContent)
    /// The alert the warning already is changes in place (an Update).
    case update(WarningContent)
    /// The alert closes, with the reason.
    case close(String)
    case nothing

    /// `found`: the alert this message or one it references already is in the group, whether it
    /// is open, and whether it was found under this message's own identifier (a message polled
    /// again: nothing to do).
    static func decide(_ alert: CAPAlert, for group: FeedGroup, area: GeoArea, found: (open: Bool, sameMessage: Bool)?, now: Date) -> Self {
        if let found, found.sameMessage { return .nothing }
        switch alert.status {
        case "Actual": break
        case "Test", "Exercise": guard group.drill else { return .nothing }
        default: return .nothing  // System and Draft are not for people
        }
        switch alert.msgType {
        case "Cancel":
            guard let found, found.open else { return .nothing }
            let note = alert.infos.first.flatMap { $0.headline ?? $0.description } ?? ""
            return .close(String(("Cancelled by its publisher" + (note.isEmpty ? "" : ": " + note)).prefix(2000)))
        case "Alert", "Update":
            let matching = alert.infos.lazy.compactMap { info -> (CAPInfo, GeoArea)? in
                guard Self.rank(Self.severity(of: info)) >= Self.rank(group.minSeverity),
                      let shape = info.areas.lazy.flatMap(\.shapes).first(where: { $0.intersects(area) }) else { return nil }
                return (info, shape)
            }.first
            guard let (info, shape) = matching else {
                return found?.open == true ? .close("The warning no longer covers the group's area") : .nothing
            }
            if let expires = info.expires, expires <= now {
                return found?.open == true ? .close("The warning expired") : .nothing
            }
            let content = WarningContent(alert: alert, info: info, shape: shape)
            guard let found else { return .raise(content) }
            return found.open ? .update(content) : .nothing
        default:
            return .nothing  // Ack and Error answer other systems
        }
    }

    /// CAP's severity as Roost's: Extreme and Severe red, Moderate amber, the rest information.
    static func severity(of info: CAPInfo) -> String {
        switch info.severity {
        case "Extreme", "Severe": AlertSeverity.red.name
        case "Moderate": AlertSeverity.amber.name
        default: AlertSeverity.info.name
        }
    }

    static func rank(_ severity: String) -> Int {
        AlertSeverity.all.firstIndex(of: AlertSeverity(severity)) ?? 0
    }
}

/// A warning as an alert shows it: text, severity, a place on the map, and `details.cap`.
struct WarningContent: Equatable {
    let text: String
    let severity: String
    /// `{"lat", "lon"}`: the centre of the warning's shape that met the group's area.
    let location: String
    let details: String
    let expires: Date?

    init(alert: CAPAlert, info: CAPInfo, shape: GeoArea) {
        var parts = [info.headline ?? info.event]
        if let description = info.description { parts.append(description) }
        if let instruction = info.instruction { parts.append(instruction) }
        let prefix = alert.status == "Actual" ? "" : "\(alert.status.uppercased()): "
        text = String((prefix + parts.joined(separator: "\n\n")).prefix(4000))
        severity = WarningDecision.severity(of: info)
        let centre = shape.centre
        location = "{\"lat\":\(centre.lat),\"lon\":\(centre.lon)}"
        expires = info.expires
        let cap = CAPDetails(sender: alert.sender, senderName: info.senderName, identifier: alert.identifier, status: alert.status,
                             msgType: alert.msgType, event: info.event, severity: info.severity, urgency: info.urgency,
                             certainty: info.certainty, sent: APIJSON.time(alert.sent), expires: info.expires.map(APIJSON.time),
                             url: info.web.flatMap(Self.webLink),
                             area: info.areas.map(\.description).filter { !$0.isEmpty }.joined(separator: "; ").nonEmptyPrefix(2000))
        details = (try? APIJSON.encode(["cap": cap])).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// `alert.details.cap` (API.md "Group areas and CAP").
    struct CAPDetails: Encodable, Equatable {
        let sender: String
        let senderName: String?
        let identifier: String
        let status: String
        let msgType: String
        let event: String
        let severity: String
        let urgency: String
        let certainty: String
        let sent: String
        let expires: String?
        let url: String?
        let area: String?

        enum CodingKeys: String, CodingKey {
            case sender, identifier, status, event, severity, urgency, certainty, sent, expires, url, area
            case senderName = "sender_name"
            case msgType = "msg_type"
        }
    }

    /// An http(s) link to show, or nil (a `javascript:` or relative `web` is not a link).
    static func webLink(_ text: String) -> String? {
        let lower = text.lowercased()
        return (lower.hasPrefix("https://") || lower.hasPrefix("http://")) && text.utf8.count <= 2048 ? text : nil
    }
}

private extension String {
    func nonEmptyPrefix(_ length: Int) -> String? { isEmpty ? nil : String(prefix(length)) }
}

extension GeoArea {
    /// A point to put the warning on the map: a circle's centre, the mean of a ring's points.
    var centre: Location {
        switch self {
        case .circle(let center, _): return center
        case .polygon(let ring):
            let count = Double(ring.points.count)
            return Location(lat: ring.points.map(\.lat).reduce(0, +) / count, lon: ring.points.map(\.lon).reduce(0, +) / count)
        }
    }
}

/// Applies CAP messages to a tenant's groups, in a transaction of the tenant: each message
/// becomes, changes or closes at most one alert per group, pushed as the group's alerts of that
/// severity are (never to outside contacts: `AlertEscalations` leaves a feed's alerts to members).
struct FeedWarnings {
    let feed: CAPFeedRow
    let now: Date

    /// What happened, for the poll's log line.
    struct Tally: Equatable {
        var raised = 0
        var updated = 0
        var closed = 0
    }

    /// A group that takes warnings, with its area read once for all the messages of a poll.
    struct PlacedGroup {
        let group: FeedGroup
        let area: GeoArea
    }

    /// The groups with their areas read (a stored area that does not read is left out).
    static func placed(_ groups: [FeedGroup]) -> [PlacedGroup] {
        groups.compactMap { group in
            (try? JSONDecoder().decode(GeoArea.self, from: Data(group.areaJSON.utf8))).map { PlacedGroup(group: group, area: $0) }
        }
    }

    func apply(_ alert: CAPAlert, tenant: UUID, groups: [PlacedGroup], tally: inout Tally, on connection: PostgresConnection) throws {
        let store = FeedStore()
        let keys = [(alert.sender, alert.identifier)] + alert.references.map { ($0.sender, $0.identifier) }
        for placed in groups {
            let (group, area) = (placed.group, placed.area)
            func decide() throws -> (WarningDecision, found: (seq: Int64, open: Bool)?) {
                let own = try store.warning(group: group.id, keys: [keys[0]], on: connection)
                let found = try own ?? store.warning(group: group.id, keys: Array(keys.dropFirst()), on: connection)
                return (WarningDecision.decide(alert, for: group, area: area, found: found.map { ($0.open, own != nil) }, now: now), found)
            }
            // Most groups a warning passes by: those are left unlocked. A group it reaches is
            // locked and decided again, so two feeds carrying one warning make one alert.
            guard try decide().0 != .nothing else { continue }
            try GroupStore().lock(group.id, on: connection)
            let (decision, found) = try decide()
            switch decision {
            case .nothing:
                continue
            case .raise(let content):
                let seq = try raise(content, tenant: tenant, group: group.id, on: connection)
                try store.recordWarning(tenant: tenant, group: group.id, sender: alert.sender, identifier: alert.identifier, seq: seq, on: connection)
                if let expires = content.expires { try store.scheduleExpiry(tenant: tenant, group: group.id, seq: seq, at: expires, on: connection) }
                tally.raised += 1
            case .update(let content):
                let seq = found!.seq
                _ = try store.update(tenant: tenant, group: group.id, seq: seq, text: content.text, severity: content.severity,
                                     details: content.details, location: content.location, on: connection)
                try store.recordWarning(tenant: tenant, group: group.id, sender: alert.sender, identifier: alert.identifier, seq: seq, on: connection)
                if let expires = content.expires { try store.scheduleExpiry(tenant: tenant, group: group.id, seq: seq, at: expires, on: connection) }
                tally.updated += 1
            case .close(let reason):
                let seq = found!.seq
                _ = try AlertStatusChange.apply(closed: true, tenant: tenant, group: group.id, seq: seq, by: (.feed, feed.id), resolution: reason,
                                                on: connection)
                try store.recordWarning(tenant: tenant, group: group.id, sender: alert.sender, identifier: alert.identifier, seq: seq, on: connection)
                tally.closed += 1
            }
        }
    }

    /// A new alert by the feed, pushed to the group when amber or red.
    private func raise(_ content: WarningContent, tenant: UUID, group: UUID, on connection: PostgresConnection) throws -> Int64 {
        let message = NewMessage(clientMessageID: nil, text: content.text, kind: .alert, severity: content.severity, template: nil,
                                 location: content.location, replyTo: nil)
        let posted = try MessageStore().post(tenant: tenant, group: group, authorType: .feed, authorID: feed.id, authorName: feed.name,
                                             message: message, details: content.details, on: connection)
        if AlertSeverity(content.severity).raisesAlert {
            try OutboxStore().enqueueAlertPushes(group: group, seq: posted.seq, excluding: nil, alert: RawJSON(posted.json),
                                                 red: content.severity == AlertSeverity.red.name, on: connection)
        }
        return posted.seq
    }
}
