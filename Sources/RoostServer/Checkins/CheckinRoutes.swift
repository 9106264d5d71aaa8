import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Check-ins (dead-man's switch)": a member promises to check in by a deadline; only
/// its owner sees or touches a check-in (anyone else gets 404). `DeadlineScheduler` raises the
/// alert when the deadline passes.
struct CheckinRoutes: Sendable {
    let accounts: AccountRoutes
    /// The shortest deadline allowed (`ROOST_CHECKIN_MIN_S`); the longest is a day.
    let minimumSeconds: Int
    static let maximumSeconds = 86_400
    static let maxActive = 5

    struct CreateBody: Decodable, KnownFields {
        static var fieldNames: Set<String> { names(CodingKeys.self) }
        let groupID: UUID
        let dueInSeconds: Int?
        let dueAt: String?
        let note: String?
        let location: MessageRoutes.Location?

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
            let location = try checkin.location.map { try JSONDecoder().decode(MessageRoutes.Location.self, from: Data($0.utf8)) }
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

    static let notFound = APIError(.notFound, code: "not_found", message: "no such check-in")

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
        let pool = accounts.pool
        builder.add(.post, "/v1/checkins", bodyLimit: 16 * 1024) { context in
            let body = try context.decodeJSON(CreateBody.self)
            let seconds = try seconds(dueIn: body.dueInSeconds, dueAt: body.dueAt)
            let note = try ProfileRoutes.text(body.note ?? "", field: "note", range: 0...1000, allowNewlines: true)
            let location = try body.location?.validatedJSON()
            let checkin = try await accounts.inGroup(context, body.groupID) { caller, connection in
                let store = CheckinStore()
                guard try store.activeCount(user: caller.user.id, on: connection) < Self.maxActive else {
                    throw APIError(.conflict, code: "conflict", message: "at most \(Self.maxActive) active check-ins; complete one first")
                }
                return try store.create(tenant: caller.user.tenantID, group: body.groupID, user: caller.user.id, note: note,
                                        location: location, dueInSeconds: seconds, on: connection)
            }
            return try APIJSON.response(.created, CheckinView(checkin: checkin))
        }
        builder.add(.get, "/v1/checkins") { context in
            let user = try await accounts.authenticate(context)
            let status = context.request.target.queryValue("status")
            guard status == nil || ["active", "completed", "missed"].contains(status!) else {
                throw APIError.invalid("status must be active, completed or missed", "status")
            }
            let checkins = try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { try CheckinStore().list(user: user.id, status: status, on: $0) }
            }
            return try APIJSON.response(.ok, Page(items: checkins.map(CheckinView.init), next: nil))
        }
        builder.add(.post, "/v1/checkins/{id:uuid}/location", bodyLimit: 4 * 1024) { context in
            let location = try context.decodeJSON(MessageRoutes.Location.self).validatedJSON()
            try await mine(context) { _, checkin, connection in
                guard checkin.status == "active" else { throw APIError(.conflict, code: "conflict", message: "the check-in has ended") }
                try CheckinStore().setLocation(checkin.id, location: location, on: connection)
            }
            return HTTPResponse(status: .noContent)
        }
        builder.add(.post, "/v1/checkins/{id:uuid}/extend", bodyLimit: 4 * 1024) { context in
            let body = try context.decodeJSON(ExtendBody.self)
            let seconds = try seconds(dueIn: body.dueInSeconds, dueAt: nil)
            let checkin = try await mine(context) { _, checkin, connection in
                guard checkin.status == "active" else { throw APIError(.conflict, code: "conflict", message: "the check-in has ended") }
                return try CheckinStore().extend(checkin.id, dueInSeconds: seconds, on: connection)
            }
            return try APIJSON.response(.ok, CheckinView(checkin: checkin))
        }
        builder.add(.post, "/v1/checkins/{id:uuid}/complete") { context in
            let checkin = try await mine(context) { user, checkin, connection in
                guard checkin.status == "active" else { throw APIError(.conflict, code: "conflict", message: "the check-in has ended") }
                let ended = try CheckinStore().end(checkin.id, status: "completed", on: connection)
                // "Home safe", for the group to see (unless the member has left it meanwhile).
                if try GroupStore().role(of: user.id, in: checkin.groupID, on: connection) != nil {
                    let data = "{\"checkin_id\":\"\(checkin.id.uuidString.lowercased())\",\"user_id\":\"\(user.id.uuidString.lowercased())\","
                        + "\"display_name\":\(JSONString.quote(user.displayName))}"
                    try GroupEventLog().append(tenant: user.tenantID, group: checkin.groupID, event: .checkinCompleted, actorType: "user",
                                               actorID: user.id, data: RawJSON(data), on: connection)
                }
                return ended
            }
            return try APIJSON.response(.ok, CheckinView(checkin: checkin))
        }
    }

    /// Runs `body` on the caller's own check-in, locked; 404 for anyone else's.
    @discardableResult
    private func mine<Value: Sendable>(
        _ context: RequestContext, _ body: @escaping @Sendable (User, Checkin, PostgresConnection) throws -> Value
    ) async throws -> Value {
        let user = try await accounts.authenticate(context)
        let id = context.parameters.uuid("id")!
        return try await accounts.pool.withConnection { connection in
            try connection.withTenantTransaction(user.tenantID) { connection in
                guard let checkin = try CheckinStore().mine(id, user: user.id, on: connection) else { throw Self.notFound }
                return try body(user, checkin, connection)
            }
        }
    }
}
