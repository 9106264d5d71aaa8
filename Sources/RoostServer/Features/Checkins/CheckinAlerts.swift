import Foundation
import RoostPersistence
import RoostProtocol

/// What a check-in tells its watching groups: its events, the red alert it raises (a missed
/// check-in, "I need help") and the all clear when its walker turns out safe. Each is sent to
/// the groups the walker is still a member of; a group they left hears nothing more.
enum CheckinAlerts {
    /// The text of a help alert with no note (the alert is the walker's own, so it names nobody).
    static let helpText = "I need help"
    /// The resolution of the alerts an all clear closes.
    static let allClearResolution = "Checked in safe"
    /// The text of the silent alert a duress answer raises.
    static let duressText = "Silent alarm: the check-in was answered with the duress PIN"

    /// Points of the trail an alert carries (spread over the walk, the newest always among them).
    static let trailPointsInAlert = 50

    /// One alert raised in one group.
    struct Raised: Sendable, Equatable {
        let group: UUID
        let seq: Int64
        let json: String
    }

    /// The watching groups the walker is still in, first first.
    static func groups(of checkin: Checkin, on connection: PostgresConnection) throws -> [(group: UUID, alertSeq: Int64?)] {
        try CheckinStore().watchers(of: checkin.id, on: connection).filter {
            try GroupStore().role(of: checkin.userID, in: $0.group, on: connection) != nil
        }
    }

    /// Appends `event` with `data` to every watching group the walker is still in.
    static func announce(_ checkin: Checkin, event: GroupEventKind, data: String, tenant: UUID, on connection: PostgresConnection) throws {
        for watcher in try groups(of: checkin, on: connection) {
            try GroupEventLog().append(tenant: tenant, group: watcher.group, event: event, actorType: .user, actorID: checkin.userID,
                                       data: RawJSON(data), on: connection)
        }
    }

    /// `{"checkin_id","user_id","display_name"}` and `extra` fields: what the check-in events
    /// after `checkin.started` carry.
    static func eventData(_ checkin: Checkin, name: String, _ extra: String = "") -> String {
        "{\"checkin_id\":\"\(checkin.id.lowercasedText)\",\"user_id\":\"\(checkin.userID.lowercasedText)\","
            + "\"display_name\":\(JSONString.quote(name))\(extra.isEmpty ? "" : "," + extra)}"
    }

    /// Raises the check-in's red alert in every watching group the walker is still in, as the
    /// walker (template `missed_checkin`, `help`, ...): the text, the place (the walker's newest
    /// unless given), and in `details` the check-in, the place's time, the battery and the
    /// trail. Every other member's devices are pushed (the trail left out of the pushes).
    ///
    /// `hidden: true` raises the duress alert: in every watching group the walker is still in,
    /// whatever was raised there before, hidden from the walker (their streams, their reads and
    /// their devices never see it or anything about it) and kept apart from the alert they see.
    static func raise(_ checkin: Checkin, template: TemplateKey, text: String, location: String?, name: String, tenant: UUID,
                      hidden: Bool = false, attachments: [UUID] = [], on connection: PostgresConnection) throws -> [Raised] {
        let store = CheckinStore()
        let place = location ?? checkin.location
        let details = "{\"checkin_id\":\"\(checkin.id.lowercasedText)\","
            + "\"location_at\":\(checkin.locationAt.map { JSONString.quote(APIJSON.time($0)) } ?? "null"),"
            + "\"battery\":\(checkin.battery.map(String.init) ?? "null"),"
            + "\"due_at\":\(JSONString.quote(APIJSON.time(checkin.dueAt))),"
            + "\"trail\":\(try store.trailJSON(of: checkin.id, limit: trailPointsInAlert, on: connection))}"
        var raised: [Raised] = []
        // The walker's photos go with the alert in every watching group.
        let attached = try Attachments.resolve(attachments, uploaderType: "user", uploader: checkin.userID, on: connection)
        if hidden {
            // The walker's own request writes rows they must not read: its reads stop being theirs.
            try connection.setViewer(nil)
        }
        for watcher in try groups(of: checkin, on: connection) where hidden || watcher.alertSeq == nil {
            var message = NewMessage(clientMessageID: nil, systemKey: "checkin:\(checkin.id.lowercasedText):\(template)", text: text,
                                     kind: .alert, severity: AlertSeverity.red.name, template: template.name, location: place, replyTo: nil)
            message.hiddenFrom = hidden ? checkin.userID : nil
            message.attachments = attached
            let posted = try MessageStore().post(tenant: tenant, group: watcher.group, authorType: .user, authorID: checkin.userID,
                                                 authorName: name, message: message, details: details, on: connection)
            let pushed = try connection.query("SELECT (\(RawJSON(posted.json))::jsonb #- '{alert,details,trail}')::text AS json")
                .rows[0].decode(String.self, "json")
            try OutboxStore().enqueueAlertPushes(group: watcher.group, seq: posted.seq, excluding: checkin.userID, alert: RawJSON(pushed), red: true,
                                                 on: connection)
            if hidden {
                try store.setDuressAlert(checkin.id, group: watcher.group, seq: posted.seq, on: connection)
            } else {
                try store.setAlert(checkin.id, group: watcher.group, seq: posted.seq, on: connection)
            }
            raised.append(Raised(group: watcher.group, seq: posted.seq, json: posted.json))
        }
        return raised
    }

    /// The walker answered with their duress PIN: the silent red alert (template `duress`) in
    /// every watching group they are still in, hidden from them, and a message to every
    /// confirmed contact watching. Nothing reaches the walker's streams or devices.
    static func duress(_ checkin: Checkin, name: String, tenant: UUID, on connection: PostgresConnection) throws {
        _ = try raise(checkin, template: .duress, text: duressText, location: nil, name: name, tenant: tenant, hidden: true, on: connection)
        try tellContacts(checkin, reason: "duress", name: name, tenant: tenant, on: connection)
    }

    /// The walker is safe after all: every alert the check-in raised that is still open is
    /// closed by them, which sends the all clear to everyone the alert reached. `push: false`
    /// closes them all the same, without the all clear (a duress answer).
    static func allClear(_ checkin: Checkin, tenant: UUID, push: Bool = true, on connection: PostgresConnection) throws {
        for watcher in try CheckinStore().watchers(of: checkin.id, on: connection) {
            guard let seq = watcher.alertSeq,
                  let alert = try MessageStore().alertState(group: watcher.group, seq: seq, on: connection),
                  alert.status == AlertStatus.open.name else { continue }
            _ = try AlertStatusChange.apply(closed: true, tenant: tenant, group: watcher.group, seq: seq, by: (.user, checkin.userID),
                                            resolution: allClearResolution, push: push, on: connection)
        }
    }

    /// Messages to one emergency contact in an hour and in a day, whatever the check-ins.
    static let contactMessagesPerHour = 3
    static let contactMessagesPerDay = 10

    /// Tells every confirmed contact watching the check-in who was not told yet, by email or SMS
    /// (template `checkin_alert`, `reason` missed, help or duress; a duress is told to those
    /// told before too), each with their own status page link (a new one replaces the last).
    /// A contact past their limits is left out (and not counted as told).
    static func tellContacts(_ checkin: Checkin, reason: String, name: String, tenant: UUID, on connection: PostgresConnection) throws {
        let store = CheckinStore()
        for (contact, told) in try store.contacts(of: checkin, on: connection) where !told || reason == "duress" {
            guard try allowed(contact, tenant: tenant, on: connection) else { continue }
            let (text, token) = TenantToken.generate(TenantToken.checkinStatus, tenant: tenant)
            try store.markTold(checkin.id, contact: contact.id, statusTokenHash: token.hash, on: connection)
            let data = "{\"contact_name\":\(JSONString.quote(contact.name)),\"walker\":\(JSONString.quote(name)),"
                + "\"walker_id\":\"\(checkin.userID.lowercasedText)\",\"reason\":\(JSONString.quote(reason)),"
                + "\"note\":\(JSONString.quote(checkin.note)),\"location\":\(checkin.location ?? "null"),\"status_token\":\(JSONString.quote(text))}"
            try OutboxStore().enqueue(tenant: tenant, email: contact.email, phone: contact.phone, template: .checkinAlert, data: RawJSON(data),
                                      on: connection)
        }
    }

    /// The all clear (template `checkin_all_clear`) to every contact who was told of the alert.
    static func allClearContacts(_ checkin: Checkin, name: String, tenant: UUID, on connection: PostgresConnection) throws {
        for (contact, told) in try CheckinStore().contacts(of: checkin, on: connection) where told {
            guard try allowed(contact, tenant: tenant, on: connection) else { continue }
            let data = "{\"contact_name\":\(JSONString.quote(contact.name)),\"walker\":\(JSONString.quote(name)),"
                + "\"walker_id\":\"\(checkin.userID.lowercasedText)\"}"
            try OutboxStore().enqueue(tenant: tenant, email: contact.email, phone: contact.phone, template: .checkinAllClear, data: RawJSON(data),
                                      on: connection)
        }
    }

    private static func allowed(_ contact: OutsideContact, tenant: UUID, on connection: PostgresConnection) throws -> Bool {
        let (hour, day) = (RateLimitKey(.emergencyContact, tenant.uuidString, contact.id.uuidString, "hour"),
                           RateLimitKey(.emergencyContact, tenant.uuidString, contact.id.uuidString, "day"))
        return try AlertPushes.allowed(RateLimit(hour, limit: contactMessagesPerHour, window: Throttle.hour),
                                       RateLimit(day, limit: contactMessagesPerDay, window: Throttle.day), on: connection)
    }

}
