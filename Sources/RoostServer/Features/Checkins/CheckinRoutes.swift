import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Check-ins (dead-man's switch)": a member promises to check in by a deadline; only
/// its owner sees or touches a check-in (anyone else gets 404). `DeadlineScheduler` raises the
/// alert when the deadline passes.
struct CheckinRoutes: Sendable {
    let auth: Authentication
    let pins: CheckinPins
    /// The shortest deadline allowed (`ROOST_CHECKIN_MIN_S`); the longest is a day.
    let minimumSeconds: Int
    static let maximumSeconds = 86_400

    struct CreateBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let groupID: UUID?
        let groupIDs: [UUID]?
        let contactIDs: [UUID]?
        let dueInSeconds: Int?
        let dueAt: String?
        let graceSeconds: Int?
        let note: String?
        let location: Location?
        let battery: Int?
        let destination: Destination?
        let stallAfterSeconds: Int?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case note, location, battery, destination
            case groupID = "group_id"
            case groupIDs = "group_ids"
            case contactIDs = "contact_ids"
            case dueInSeconds = "due_in_s"
            case dueAt = "due_at"
            case graceSeconds = "grace_s"
            case stallAfterSeconds = "stall_after_s"
        }

        /// `group_ids`, or the one `group_id` of the first version (one of the two).
        func groups() throws(APIError) -> [UUID] {
            switch (groupID, groupIDs) {
            case (let one?, nil): return [one]
            case (nil, let many?): return many
            default: throw APIError.invalid("give group_ids (or one group_id)", "group_ids")
            }
        }
    }

    struct ExtendBody: Decodable, KnownFields {
        let dueInSeconds: Int
        /// Required once PINs are set: more time is an answer like "I'm safe".
        let pin: String?
        enum CodingKeys: String, CodingKey {
            case dueInSeconds = "due_in_s"
            case pin
        }
        static let fieldNames: Set<String> = ["due_in_s", "pin"]
    }

    struct LocationBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let lat: Double
        let lon: Double
        let accuracyM: Double?
        let battery: Int?
        enum CodingKeys: String, CodingKey, CaseIterable { case lat, lon, battery, accuracyM = "accuracy_m" }
    }

    struct HelpBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let note: String?
        let location: Location?
        let attachments: [UUID]?
        enum CodingKeys: String, CodingKey, CaseIterable { case note, location, attachments }
    }

    /// Seconds from now to a deadline given as `due_in_s` or an RFC 3339 `due_at`, within bounds.
    func seconds(dueIn: Int?, dueAt: String?) throws(APIError) -> Double {
        let seconds: Double
        switch (dueIn, dueAt) {
        case (let dueIn?, nil): seconds = Double(dueIn)
        case (nil, let text?):
            guard let date = APIJSON.date(text) else { throw APIError.invalid("due_at must be an RFC 3339 time such as 2026-11-21T18:00:00Z", "due_at") }
            seconds = date.timeIntervalSinceNow
        default: throw APIError.invalid("give exactly one of due_in_s and due_at", "due_in_s")
        }
        guard seconds >= Double(minimumSeconds) - 1, seconds <= Double(Self.maximumSeconds) else {
            throw APIError.invalid("the deadline must be \(minimumSeconds) s to 24 h away", dueAt == nil ? "due_in_s" : "due_at")
        }
        return max(seconds, Double(minimumSeconds))
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.post, "/v1/checkins", bodyLimit: 16 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(CreateBody.self)
            let start = try StartCheckin(groups: try body.groups(), contacts: body.contactIDs ?? [], seconds: try seconds(dueIn: body.dueInSeconds, dueAt: body.dueAt),
                                         graceSeconds: body.graceSeconds, note: body.note, location: body.location, battery: body.battery,
                                         destination: body.destination, stallAfterSeconds: body.stallAfterSeconds)
            return try APIJSON.response(.created, CheckinView(checkin: try await caller.run(start)))
        }
        builder.add(.get, "/v1/checkins", signedIn: auth) { context, caller in
            let status = context.request.target.queryValue("status")
            guard status == nil || CheckinStatus(rawValue: status!) != nil else {
                throw APIError.invalid("status must be one of " + CheckinStatus.allCases.map(\.rawValue).joined(separator: ", "), "status")
            }
            let (limit, after) = (try context.limit(), try context.cursor(\.newestFirst))
            let checkins = try await caller.inTenant { user, connection in
                try CheckinStore().list(user: user.id, status: status, after: after, limit: limit, on: connection)
            }
            let next = checkins.count == limit ? checkins.last.map { ListCursor.write(NewestFirst($0.createdAt, $0.id)) } : nil
            return try APIJSON.response(.ok, Page(items: checkins.map(CheckinView.init), next: next))
        }
        // The walks a group watches, for its members: "walking now", with each one's trail.
        builder.add(.get, "/v1/groups/{gid:uuid}/checkins", signedIn: auth) { context, caller in
            .json(.ok, Array(try await caller.run(ListWatchedWalks(group: context.parameters.uuid("gid")!)).utf8))
        }
        builder.add(.get, "/v1/checkins/{id:uuid}", signedIn: auth) { context, caller in
            let id = context.parameters.uuid("id")!
            let checkin = try await caller.inTenant { user, connection in
                try CheckinStore().find(id, on: connection).flatMap { $0.userID == user.id ? $0 : nil }
            }
            guard let checkin else { throw APIError.noSuchCheckin }
            return try APIJSON.response(.ok, CheckinView(checkin: checkin))
        }
        builder.add(.post, "/v1/checkins/{id:uuid}/location", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(LocationBody.self)
            try await caller.run(ShareCheckinLocation(checkin: context.parameters.uuid("id")!, location: Location(lat: body.lat, lon: body.lon,
                                                                                                                  accuracyM: body.accuracyM),
                                                      battery: body.battery))
            return HTTPResponse(status: .noContent)
        }
        builder.add(.post, "/v1/checkins/{id:uuid}/extend", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(ExtendBody.self)
            let seconds = try seconds(dueIn: body.dueInSeconds, dueAt: nil)
            // The duress PIN is answered exactly like the safe one, while the silent alert goes out.
            let duress = try await pins.verify(body.pin, context, caller) == .duress
            let extend = ExtendCheckin(checkin: context.parameters.uuid("id")!, seconds: seconds, duress: duress)
            return try APIJSON.response(.ok, CheckinView(checkin: try await caller.run(extend)))
        }
        // With PINs set, the PIN decides; the duress PIN's answer is the safe PIN's, byte for byte.
        builder.add(.post, "/v1/checkins/{id:uuid}/complete", bodyLimit: 1024, signedIn: auth) { context, caller in
            let duress = try await pins.answer(context, caller) == .duress
            let checkin = try await caller.run(CompleteCheckin(checkin: context.parameters.uuid("id")!, duress: duress))
            return try APIJSON.response(.ok, CheckinView(checkin: checkin))
        }
        builder.add(.post, "/v1/checkins/{id:uuid}/cancel", bodyLimit: 1024, signedIn: auth) { context, caller in
            let duress = try await pins.answer(context, caller) == .duress
            let checkin = try await caller.run(CancelCheckin(checkin: context.parameters.uuid("id")!, duress: duress))
            return try APIJSON.response(.ok, CheckinView(checkin: checkin))
        }
        builder.add(.post, "/v1/checkins/{id:uuid}/help", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = context.request.body.isEmpty ? nil : try context.decodeJSON(HelpBody.self)
            let help = try CheckinHelp(checkin: context.parameters.uuid("id")!, note: body?.note, location: body?.location,
                                       attachments: body?.attachments ?? [])
            return .json(.created, Array(try await caller.run(help).utf8))
        }
    }
}
