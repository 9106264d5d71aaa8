import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Check-ins (dead-man's switch)": a member promises to check in by a deadline; only
/// its owner sees or touches a check-in (anyone else gets 404). `DeadlineScheduler` raises the
/// alert when the deadline passes.
struct CheckinRoutes: Sendable {
    let auth: Authentication
    /// The shortest deadline allowed (`ROOST_CHECKIN_MIN_S`); the longest is a day.
    let minimumSeconds: Int
    static let maximumSeconds = 86_400

    struct CreateBody: Decodable, KnownFields {
        static var fieldNames: Set<String> { names(CodingKeys.self) }
        let groupID: UUID
        let dueInSeconds: Int?
        let dueAt: String?
        let note: String?
        let location: Location?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case note, location
            case groupID = "group_id"
            case dueInSeconds = "due_in_s"
            case dueAt = "due_at"
        }
    }

    struct ExtendBody: Decodable, KnownFields {
        let dueInSeconds: Int
        enum CodingKeys: String, CodingKey { case dueInSeconds = "due_in_s" }
        static let fieldNames: Set<String> = ["due_in_s"]
    }

    struct CheckinView: Encodable {
        let checkin: Checkin

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(checkin.id.uuidString.lowercased(), forKey: .id)
            try container.encode(checkin.groupID.uuidString.lowercased(), forKey: .groupID)
            try container.encode(checkin.status, forKey: .status)
            try container.encode(checkin.note, forKey: .note)
            let location = try checkin.location.map { try JSONDecoder().decode(Location.self, from: Data($0.utf8)) }
            try container.encode(location, forKey: .location)
            try container.encode(checkin.dueAt, forKey: .dueAt)
            try container.encode(checkin.createdAt, forKey: .createdAt)
            try container.encode(checkin.alertSeq, forKey: .alertSeq)
        }

        enum CodingKeys: String, CodingKey {
            case id, status, note, location
            case groupID = "group_id"
            case dueAt = "due_at"
            case createdAt = "created_at"
            case alertSeq = "alert_seq"
        }
    }

    /// Seconds from now to a deadline given as `due_in_s` or an RFC 3339 `due_at`, within bounds.
    func seconds(dueIn: Int?, dueAt: String?) throws(APIError) -> Double {
        let seconds: Double
        switch (dueIn, dueAt) {
        case (let dueIn?, nil): seconds = Double(dueIn)
        case (nil, let text?):
            guard let date = Self.parseDate(text) else { throw APIError.invalid("due_at must be an RFC 3339 time such as 2026-11-21T18:00:00Z", "due_at") }
            seconds = date.timeIntervalSinceNow
        default: throw APIError.invalid("give exactly one of due_in_s and due_at", "due_in_s")
        }
        guard seconds >= Double(minimumSeconds) - 1, seconds <= Double(Self.maximumSeconds) else {
            throw APIError.invalid("the deadline must be \(minimumSeconds) s to 24 h away", dueAt == nil ? "due_in_s" : "due_at")
        }
        return max(seconds, Double(minimumSeconds))
    }

    static func parseDate(_ text: String) -> Date? {
        let precise = ISO8601DateFormatter()
        precise.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return precise.date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.post, "/v1/checkins", bodyLimit: 16 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(CreateBody.self)
            let start = try StartCheckin(group: body.groupID, seconds: try seconds(dueIn: body.dueInSeconds, dueAt: body.dueAt), note: body.note,
                                         location: body.location)
            return try APIJSON.response(.created, CheckinView(checkin: try await caller.run(start)))
        }
        builder.add(.get, "/v1/checkins", signedIn: auth) { context, caller in
            let status = context.request.target.queryValue("status")
            guard status == nil || ["active", "completed", "missed"].contains(status!) else {
                throw APIError.invalid("status must be active, completed or missed", "status")
            }
            let (limit, after) = (try context.limit(), try context.cursor(\.newestFirst))
            let checkins = try await caller.inTenant { user, connection in
                try CheckinStore().list(user: user.id, status: status, after: after, limit: limit, on: connection)
            }
            let next = checkins.count == limit ? checkins.last.map { ListCursor.write(NewestFirst($0.createdAt, $0.id)) } : nil
            return try APIJSON.response(.ok, Page(items: checkins.map(CheckinView.init), next: next))
        }
        builder.add(.post, "/v1/checkins/{id:uuid}/location", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            try await caller.run(ShareCheckinLocation(checkin: context.parameters.uuid("id")!, location: context.decodeJSON(Location.self)))
            return HTTPResponse(status: .noContent)
        }
        builder.add(.post, "/v1/checkins/{id:uuid}/extend", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(ExtendBody.self)
            let extend = ExtendCheckin(checkin: context.parameters.uuid("id")!, seconds: try seconds(dueIn: body.dueInSeconds, dueAt: nil))
            return try APIJSON.response(.ok, CheckinView(checkin: try await caller.run(extend)))
        }
        builder.add(.post, "/v1/checkins/{id:uuid}/complete", signedIn: auth) { context, caller in
            let checkin = try await caller.run(CompleteCheckin(checkin: context.parameters.uuid("id")!))
            return try APIJSON.response(.ok, CheckinView(checkin: checkin))
        }
    }
}
