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
    /// A new alert for the group's owner and admins only (`Audience.managersOnly`), red whether
    /// the bridge is armed or not: an alarm panel's duress code, which must not reach the house.
    var managersOnly = false

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

    /// What a bridge's event did.
    enum Outcome: Sendable {
        /// A new alert (201), its JSON.
        case created(String)
        /// The open alert again, or the last one within the bridge's cooldown: counted, not raised.
        case repeated(String)
        /// The open alert, closed.
        case resolved(String)
        /// A resolve with no open alert under its key.
        case nothingOpen
    }

    /// Applies the event to the bridge's group: a trigger raises, repeats or (within the
    /// cooldown) counts; a resolve closes. A new alert carries the bridge's place when it names
    /// none, and is only information, paging nobody, while the bridge is disarmed (by hand or by
    /// its schedule).
    func run(by bridge: Bridge, tenant: UUID, on connection: PostgresConnection) throws -> Outcome {
        try GroupStore().lock(bridge.groupID, on: connection)
        let store = BridgeStore()
        let open = try store.openAlert(bridge: bridge.id, dedupKey: dedupKey, on: connection)
        switch (action, open) {
        case (.resolve, nil):
            return .nothingOpen
        case (.resolve, let seq?):
            return .resolved(try AlertStatusChange.apply(closed: true, tenant: tenant, group: bridge.groupID, seq: seq, by: (.bridge, bridge.id),
                                                         resolution: summary, on: connection))
        case (.trigger, let seq?):
            return .repeated(try repeated(seq, by: bridge, tenant: tenant, on: connection))
        case (.trigger, nil):
            if let cooldown = bridge.cooldownSeconds, let last = try store.recentAlert(bridge: bridge.id, dedupKey: dedupKey, within: cooldown, on: connection) {
                return .repeated(try repeated(last, by: bridge, tenant: tenant, on: connection))
            }
            let severity = managersOnly ? AlertSeverity.red.name : BridgeArm(bridge).isArmed(at: Date()) ? severity : AlertSeverity.info.name
            var message = NewMessage(clientMessageID: nil, text: Self.text(summary!, at: bridge.place?.address), kind: .alert, severity: severity,
                                     template: nil, location: location ?? bridge.place?.location, replyTo: nil)
            message.hiddenFrom = managersOnly ? Audience.managersOnly : nil
            message.attachments = try Attachments.resolve(attachments, uploaderType: "bridge", uploader: bridge.id, on: connection)
            // A concurrent trigger under the same key fails this insert (uniqueViolation): the caller retries, as a repeat.
            let posted = try MessageStore().post(tenant: tenant, group: bridge.groupID, authorType: .bridge, authorID: bridge.id,
                                                 authorName: bridge.name, message: message, dedupKey: dedupKey, bridge: bridge.id,
                                                 details: details, on: connection)
            if AlertSeverity(severity).raisesAlert {
                try OutboxStore().enqueueAlertPushes(group: bridge.groupID, seq: posted.seq, excluding: nil, alert: RawJSON(posted.json),
                                                     red: severity == AlertSeverity.red.name, managersOnly: managersOnly, on: connection)
            }
            return .created(posted.json)
        }
    }

    /// Counts a repeat of the alert at `seq` (one `alert.repeated` event); its JSON.
    private func repeated(_ seq: Int64, by bridge: Bridge, tenant: UUID, on connection: PostgresConnection) throws -> String {
        let (count, hiddenFrom) = try BridgeStore().repeatAlert(group: bridge.groupID, seq: seq, on: connection)
        try GroupEventLog().append(tenant: tenant, group: bridge.groupID, event: .alertRepeated, actorType: .bridge,
                                   actorID: bridge.id, data: RawJSON("{\"seq\":\(seq),\"repeat_count\":\(count)}"),
                                   hiddenFrom: hiddenFrom, on: connection)
        return try MessageStore().message(group: bridge.groupID, seq: seq, on: connection)!
    }

    /// The alert's text: the summary, then the bridge's address on a line of its own (so the
    /// street reads whose house it is), unless the summary names it already.
    static func text(_ summary: String, at address: String?) -> String {
        guard let address, !summary.localizedCaseInsensitiveContains(address) else { return summary }
        let line = "\n" + address
        return String(summary.prefix(4000 - line.count)) + line
    }
}
