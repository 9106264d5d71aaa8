import Foundation
import RoostPersistence
import RoostProtocol

/// A member starts a check-in watched by one or more of their groups: a deadline by which they
/// promise to check in, how long to wait for an answer to the prompt, a note, where they are,
/// and optionally where they are going and how long standing still may last. Each group hears
/// `checkin.started` ("Ann is walking home, due 23:40"). At most `maxWalking` at once.
struct StartCheckin: UserUseCase {
    static let maxWalking = 5
    static let maxGroups = 5

    var new: NewCheckin

    static let maxContacts = 5

    init(groups: [UUID], contacts: [UUID] = [], seconds: Double, graceSeconds: Int?, note: String?, location: Location?, battery: Int?,
         destination: Destination?, stallAfterSeconds: Int?) throws(APIError) {
        var unique: [UUID] = []
        for group in groups where !unique.contains(group) { unique.append(group) }
        guard (1...Self.maxGroups).contains(unique.count) else {
            throw APIError.invalid("name 1 to \(Self.maxGroups) groups to watch the check-in", "group_ids")
        }
        let grace = graceSeconds ?? CheckinPolicy.defaultGraceSeconds
        guard CheckinPolicy.graceRange.contains(grace) else { throw APIError.invalid("grace_s must be 0 to 3600 seconds", "grace_s") }
        if let stallAfterSeconds, !CheckinPolicy.stallRange.contains(stallAfterSeconds) {
            throw APIError.invalid("stall_after_s must be 60 to 86400 seconds", "stall_after_s")
        }
        let contacts = Array(Set(contacts))
        guard contacts.count <= Self.maxContacts else { throw APIError.invalid("at most \(Self.maxContacts) contacts", "contact_ids") }
        var new = NewCheckin(groups: unique, note: try BoundedText.validate(note ?? "", field: "note", range: 0...1000, allowNewlines: true),
                         location: try location?.validatedJSON(), battery: try Self.validate(battery: battery), dueInSeconds: seconds,
                         graceSeconds: grace, destination: try destination?.validatedJSON(), stallAfterSeconds: stallAfterSeconds)
        new.contacts = contacts
        self.new = new
    }

    static func validate(battery: Int?) throws(APIError) -> Int? {
        if let battery, !(0...100).contains(battery) { throw APIError.invalid("battery is a percentage, 0 to 100", "battery") }
        return battery
    }

    func run(by user: User, on connection: PostgresConnection) throws -> Checkin {
        for group in new.groups where try GroupStore().role(of: user.id, in: group, on: connection) == nil {
            throw APIError.noSuchGroup
        }
        guard try OutsideContactStore.emergency.existing(owner: user.id, among: new.contacts, on: connection).count == new.contacts.count else {
            throw APIError(.notFound, code: .notFound, message: "no such emergency contact")
        }
        let store = CheckinStore()
        guard try store.walkingCount(user: user.id, on: connection) < Self.maxWalking else {
            throw APIError(.conflict, code: .conflict, message: "at most \(Self.maxWalking) check-ins at once; complete one first")
        }
        let checkin = try store.create(tenant: user.tenantID, user: user.id, new, on: connection)
        try store.schedule(checkin.id, tenant: user.tenantID, at: CheckinPolicy.firstLook(CheckinPolicy.Clock(checkin)), on: connection)
        let data = "{\"id\":\"\(checkin.id.lowercasedText)\",\"user\":{\"id\":\"\(user.id.lowercasedText)\","
            + "\"display_name\":\(JSONString.quote(user.displayName))},\"due_at\":\(JSONString.quote(APIJSON.time(checkin.dueAt))),"
            + "\"note\":\(JSONString.quote(checkin.note))}"
        try CheckinAlerts.announce(checkin, event: .checkinStarted, data: data, tenant: user.tenantID, on: connection)
        return checkin
    }
}

/// Something a walker asks of one of their own check-ins. Only its owner sees or touches a
/// check-in: anyone else gets 404, as for one that does not exist. `CheckinPolicy` says which
/// answers each status takes (409 otherwise).
protocol OwnCheckinChange: UserUseCase {
    var checkin: UUID { get }
    static var answer: CheckinPolicy.Answer { get }
    func change(_ checkin: Checkin, _ outcome: CheckinPolicy.Outcome, by user: User, on connection: PostgresConnection) throws -> Output
}

extension OwnCheckinChange {
    func run(by user: User, on connection: PostgresConnection) throws -> Output {
        guard let found = try CheckinStore().mine(checkin, user: user.id, on: connection) else { throw APIError.noSuchCheckin }
        let outcome = try CheckinPolicy.outcome(of: Self.answer, status: CheckinStatus(of: found), ended: found.endedAt != nil)
        return try change(found, outcome, by: user, on: connection)
    }
}

/// Where the walker is now, with the battery: the newest point is kept (the alert, if one is
/// raised, carries it), the trail takes at most one point in 15 s, standing still is measured,
/// and a point inside the destination completes the walk (`reason: "arrived"`).
struct ShareCheckinLocation: OwnCheckinChange {
    typealias Output = Void
    static let answer = CheckinPolicy.Answer.location
    let checkin: UUID
    let location: Location
    let battery: Int?

    init(checkin: UUID, location: Location, battery: Int?) throws(APIError) {
        try location.validate()
        self.checkin = checkin
        self.location = location
        self.battery = try StartCheckin.validate(battery: battery)
    }

    func change(_ checkin: Checkin, _ outcome: CheckinPolicy.Outcome, by user: User, on connection: PostgresConnection) throws {
        let now = try connection.query("SELECT now() AS now").rows[0].decode(Date.self, "now")
        let place = try checkin.stillLocation.map { try JSONDecoder().decode(Location.self, from: Data($0.utf8)) }
        let still = CheckinPolicy.stillness(place: place, since: checkin.stillSince, point: location, now: now)
        let keep = CheckinPolicy.keepsTrailPoint(lastAt: checkin.trailAt, points: checkin.trailPoints, now: now)
        try CheckinStore().recordLocation(checkin, tenant: user.tenantID, location: try location.validatedJSON(), battery: battery,
                                          stillLocation: try still.place.validatedJSON(), stillSince: still.since, trail: keep, on: connection)
        if keep && checkin.endedAt == nil {
            try WatchedWalks.moved(checkin, to: location, battery: battery, at: now, tenant: user.tenantID, on: connection)
        }
        let destination = try checkin.destination.map { try JSONDecoder().decode(Destination.self, from: Data($0.utf8)) }
        guard CheckinStatus(of: checkin).isWalking && CheckinPolicy.arrived(at: location, destination: destination) else { return }
        // With PINs set, arriving is not an answer (whoever holds the phone may have walked it
        // there): the walk asks for the PIN, with the usual grace, as at its deadline.
        if try PinStore().pins(of: user.id, on: connection) != nil {
            if CheckinStatus(of: checkin) == .active {
                try CheckinDeadlines.prompt(checkin, at: now, reason: "arrived", tenant: user.tenantID, on: connection)
            }
        } else {
            _ = try CompleteCheckin.finish(checkin, reason: "arrived", allClear: false, by: user, on: connection)
        }
    }
}

/// A new deadline, counted from now; also the answer "I'm OK, give me more time" to a prompt.
struct ExtendCheckin: OwnCheckinChange {
    typealias Output = Checkin
    static let answer = CheckinPolicy.Answer.extend
    let checkin: UUID
    let seconds: Double
    /// Answered with the duress PIN (`CheckinPins`): extended as asked, and the silent alert raised.
    var duress = false

    func change(_ checkin: Checkin, _ outcome: CheckinPolicy.Outcome, by user: User, on connection: PostgresConnection) throws -> Checkin {
        let store = CheckinStore()
        let extended = try store.extend(checkin.id, dueInSeconds: seconds, on: connection)
        try store.reschedule(checkin.id, at: CheckinPolicy.firstLook(CheckinPolicy.Clock(extended)), on: connection)
        let data = CheckinAlerts.eventData(extended, name: user.displayName, "\"due_at\":\(JSONString.quote(APIJSON.time(extended.dueAt)))")
        try CheckinAlerts.announce(extended, event: .checkinExtended, data: data, tenant: user.tenantID, on: connection)
        if duress { try CheckinAlerts.duress(extended, name: user.displayName, tenant: user.tenantID, on: connection) }
        return extended
    }
}

/// The walker checks in: "home safe" (`checkin.completed`). When its alert went out already,
/// every alert it raised that is still open is closed, which is the all clear.
struct CompleteCheckin: OwnCheckinChange {
    typealias Output = Checkin
    static let answer = CheckinPolicy.Answer.complete
    let checkin: UUID
    /// Answered with the duress PIN (`CheckinPins`).
    var duress = false

    func change(_ checkin: Checkin, _ outcome: CheckinPolicy.Outcome, by user: User, on connection: PostgresConnection) throws -> Checkin {
        guard case .complete(let allClear) = outcome else { return checkin }
        return try Self.finish(checkin, reason: "checked_in", allClear: allClear, duress: duress, by: user, on: connection)
    }

    /// Ends the walk completed. Under duress, everything the walker can see happens exactly as
    /// for the safe answer (open alerts close, `checkin.completed`), while the all clear is left
    /// out and the silent alert goes to everyone else instead (`CheckinAlerts.duress`).
    static func finish(_ checkin: Checkin, reason: String, allClear: Bool, duress: Bool = false, by user: User,
                       on connection: PostgresConnection) throws -> Checkin {
        let ended = try CheckinStore().end(checkin.id, status: CheckinStatus.completed.rawValue, reason: reason,
                                           purgeAfter: CheckinPolicy.retention, on: connection)
        if allClear {
            try CheckinAlerts.allClear(ended, tenant: user.tenantID, push: !duress, on: connection)
            if !duress { try CheckinAlerts.allClearContacts(ended, name: user.displayName, tenant: user.tenantID, on: connection) }
        }
        let data = CheckinAlerts.eventData(ended, name: user.displayName, "\"reason\":\(JSONString.quote(reason))")
        try CheckinAlerts.announce(ended, event: .checkinCompleted, data: data, tenant: user.tenantID, on: connection)
        if duress { try CheckinAlerts.duress(ended, name: user.displayName, tenant: user.tenantID, on: connection) }
        return ended
    }
}

/// The walker calls it off before any alert: it ends without an announcement beyond
/// `checkin.cancelled` (no alert, no push).
struct CancelCheckin: OwnCheckinChange {
    typealias Output = Checkin
    static let answer = CheckinPolicy.Answer.cancel
    let checkin: UUID
    /// Answered with the duress PIN: cancelled as asked, and the silent alert raised.
    var duress = false

    func change(_ checkin: Checkin, _ outcome: CheckinPolicy.Outcome, by user: User, on connection: PostgresConnection) throws -> Checkin {
        let ended = try CheckinStore().end(checkin.id, status: CheckinStatus.cancelled.rawValue, reason: "cancelled",
                                           purgeAfter: CheckinPolicy.retention, on: connection)
        try CheckinAlerts.announce(ended, event: .checkinCancelled, data: CheckinAlerts.eventData(ended, name: user.displayName),
                                   tenant: user.tenantID, on: connection)
        if duress { try CheckinAlerts.duress(ended, name: user.displayName, tenant: user.tenantID, on: connection) }
        return ended
    }
}

/// "I need help": the red alert goes out at once (template `help`) in every watching group the
/// walker is still in, and the check-in is `escalated`. The first group's alert is the answer.
struct CheckinHelp: OwnCheckinChange {
    typealias Output = String
    static let answer = CheckinPolicy.Answer.help
    let checkin: UUID
    let note: String?
    let location: String?
    /// The walker's uploads, linked into the alert in every watching group.
    let attachments: [UUID]

    init(checkin: UUID, note: String?, location: Location?, attachments: [UUID] = []) throws(APIError) {
        try Attachments.validate(attachments)
        self.attachments = attachments
        self.checkin = checkin
        self.note = try note.map { value throws(APIError) in try BoundedText.validate(value, field: "note", range: 1...1000, allowNewlines: true) }
        self.location = try location?.validatedJSON()
    }

    func change(_ checkin: Checkin, _ outcome: CheckinPolicy.Outcome, by user: User, on connection: PostgresConnection) throws -> String {
        let text = note ?? (checkin.note.isEmpty ? CheckinAlerts.helpText : checkin.note)
        let raised = try CheckinAlerts.raise(checkin, template: .help, text: text, location: location, name: user.displayName,
                                             tenant: user.tenantID, attachments: attachments, on: connection)
        guard let first = raised.first else {
            throw APIError(.conflict, code: .conflict, message: "you are no longer in any of the check-in's groups; post the alert in a group")
        }
        try CheckinAlerts.tellContacts(checkin, reason: "help", name: user.displayName, tenant: user.tenantID, on: connection)
        let now = try connection.query("SELECT now() AS now").rows[0].decode(Date.self, "now")
        try CheckinStore().alerted(checkin.id, status: CheckinStatus.escalated.rawValue, at: now,
                                   lapseAt: now.addingTimeInterval(CheckinPolicy.alertLifetime), on: connection)
        return first.json
    }
}

extension APIError {
    static let noSuchCheckin = APIError(.notFound, code: .notFound, message: "no such check-in")
}
