import Foundation
import RoostPersistence
import RoostProtocol

/// A bridge raises or resolves an alert in its group (API.md "Bridges"). Under its
/// `dedup_key`, a trigger while the same alert is open is a repeat (counted, one
/// `alert.repeated` event), otherwise a new alert, pushed to every member when amber or red; a
/// resolve closes the open alert (the alarm was reset). Run in a transaction of the bridge's
/// tenant after the bridge was admitted (key, rate, signature).
struct BridgeAlert: Sendable {
    enum Action: String, Sendable { case trigger, resolve }

    let action: Action
    let dedupKey: String
    /// The alert's text (trigger), or the resolution (resolve).
    let summary: String?
    let severity: String
    let location: String?
    let details: String?
    /// The bridge's own uploads (a camera's snapshot), linked into a new alert.
    let attachments: [UUID]

    /// Validates the request whatever its action; 400 naming the field at fault.
    init(action: String, dedupKey: String, summary: String?, severity: String?, occurredAt: String?, location: Location?,
         attachments: [UUID] = [], details: () throws(APIError) -> String?) throws(APIError) {
        guard let action = Action(rawValue: action) else { throw APIError.invalid("action must be trigger or resolve", "action") }
        self.dedupKey = try BoundedText.clientKey(dedupKey, field: "dedup_key")
        self.summary = try summary.map { value throws(APIError) in
            try BoundedText.validate(value, field: "summary", range: 1...4000, allowNewlines: true)
        }
        if action == .trigger && self.summary == nil { throw APIError.invalid("a trigger needs a summary", "summary") }
        if let severity, !AlertSeverity(severity).isKnown {
            throw APIError.invalid("severity must be info, amber or red", "severity")
        }
        if let occurredAt, APIJSON.date(occurredAt) == nil {
            throw APIError.invalid("occurred_at must be an RFC 3339 time", "occurred_at")
        }
        self.location = try location?.validatedJSON()
        self.details = try details()
        try Attachments.validate(attachments)
        self.attachments = attachments
        self.action = action
        self.severity = severity ?? AlertSeverity.amber.name
    }

    /// Whether a new alert was raised (`false`: a repeat, or a resolve), and the alert's JSON.
    func run(by bridge: Bridge, tenant: UUID, on connection: PostgresConnection) throws -> (created: Bool, json: String) {
        try GroupStore().lock(bridge.groupID, on: connection)
        let store = BridgeStore()
        let open = try store.openAlert(bridge: bridge.id, dedupKey: dedupKey, on: connection)
        switch (action, open) {
        case (.resolve, nil):
            throw APIError(.notFound, code: .notFound, message: "no open alert under that dedup_key", field: "dedup_key")
        case (.resolve, let seq?):
            return (false, try AlertStatusChange.apply(closed: true, tenant: tenant, group: bridge.groupID, seq: seq, by: (.bridge, bridge.id),
                                                       resolution: summary, on: connection))
        case (.trigger, let seq?):
            let count = try store.repeatAlert(group: bridge.groupID, seq: seq, on: connection)
            try GroupEventLog().append(tenant: tenant, group: bridge.groupID, event: .alertRepeated, actorType: .bridge,
                                       actorID: bridge.id, data: RawJSON("{\"seq\":\(seq),\"repeat_count\":\(count)}"), on: connection)
            return (false, try MessageStore().message(group: bridge.groupID, seq: seq, on: connection)!)
        case (.trigger, nil):
            var message = NewMessage(clientMessageID: nil, text: summary!, kind: .alert, severity: severity, template: nil,
                                     location: location, replyTo: nil)
            message.attachments = try Attachments.resolve(attachments, uploaderType: "bridge", uploader: bridge.id, on: connection)
            // A concurrent trigger under the same key fails this insert (uniqueViolation): the route retries, as a repeat.
            let posted = try MessageStore().post(tenant: tenant, group: bridge.groupID, authorType: .bridge, authorID: bridge.id,
                                                 authorName: bridge.name, message: message, dedupKey: dedupKey, bridge: bridge.id,
                                                 details: details, on: connection)
            if AlertSeverity(severity).raisesAlert {
                try OutboxStore().enqueueAlertPushes(group: bridge.groupID, seq: posted.seq, excluding: nil, alert: RawJSON(posted.json),
                                                     red: severity == AlertSeverity.red.name, on: connection)
            }
            return (true, posted.json)
        }
    }
}
