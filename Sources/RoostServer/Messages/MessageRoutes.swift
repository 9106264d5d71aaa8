import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Messages and alerts": posting (idempotent on `client_msg_id`), reading the
/// messages and the event log, alerts with their lifecycle (ack, close, reopen), redaction and
/// templates. Every change is one event on the group's log, written with its projections in
/// one transaction; the stream picks it up from there.
struct MessageRoutes: Sendable {
    let accounts: AccountRoutes

    /// A place on the map (messages, alerts from bridges, check-ins).
    struct Location: Codable, Sendable {
        let lat: Double
        let lon: Double
        let accuracyM: Double?
        enum CodingKeys: String, CodingKey { case lat, lon, accuracyM = "accuracy_m" }

        /// The location as JSON text, once its coordinates are checked (400 naming the field).
        func validatedJSON() throws -> String {
            guard (-90...90).contains(lat) else { throw APIError.invalid("lat must be between -90 and 90", "location.lat") }
            guard (-180...180).contains(lon) else { throw APIError.invalid("lon must be between -180 and 180", "location.lon") }
            if let accuracyM, !(accuracyM >= 0 && accuracyM.isFinite) {
                throw APIError.invalid("accuracy_m must be 0 or more", "location.accuracy_m")
            }
            return String(decoding: try APIJSON.encode(self), as: UTF8.self)
        }
    }

    struct PostBody: Decodable, KnownFields {
        static var fieldNames: Set<String> { names(CodingKeys.self) }
        let clientMessageID: String
        let text: String?
        let kind: String
        let severity: String?
        let template: String?
        let location: Location?
        let replyTo: Int64?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case text, kind, severity, template, location
            case clientMessageID = "client_msg_id"
            case replyTo = "reply_to"
        }
    }

    struct AckBody: Decodable, KnownFields {
        let response: String
        let note: String?
        static let fieldNames: Set<String> = ["response", "note"]
    }

    struct CloseBody: Decodable, KnownFields {
        let resolution: String?
        static let fieldNames: Set<String> = ["resolution"]
    }

    struct TemplatesBody: Decodable, KnownFields {
        let templates: [MessageTemplate]
        static let fieldNames: Set<String> = ["templates"]
    }

    static let severities = Set(AlertSeverity.all.map(\.name))
    static let responses: Set<String> = ["seen", "on_my_way", "cannot_help"]

    /// A JSON list of items already encoded as JSON text.
    static func page(_ items: [String], next: String?) -> HTTPResponse {
        let nextText = next.map { JSONString.quote($0) } ?? "null"
        return .json(.ok, Array("{\"items\":[\(items.joined(separator: ","))],\"next\":\(nextText)}".utf8))
    }

    /// A `?name=` whole number ≥ 0, or nil when absent.
    static func seqParameter(_ context: RequestContext, _ name: String) throws(APIError) -> Int64? {
        guard let text = context.request.target.queryValue(name) else { return nil }
        guard let value = Int64(text), value >= 0 else { throw APIError.invalid("\(name) must be a whole number ≥ 0", name) }
        return value
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.post, "/v1/groups/{gid:uuid}/messages", bodyLimit: 64 * 1024) { context in try await post(context) }
        builder.add(.get, "/v1/groups/{gid:uuid}/messages") { context in
            let group = context.parameters.uuid("gid")!
            let limit = try context.limit()
            let before = try Self.seqParameter(context, "before")
            let rows = try await accounts.inGroup(context, group) { _, connection in
                try MessageStore().messages(group: group, before: before, limit: limit, on: connection)
            }
            return Self.page(rows.map(\.json), next: rows.count == limit ? rows.last.map { String($0.seq) } : nil)
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/events") { context in
            let group = context.parameters.uuid("gid")!
            let limit = try context.limit()
            let after = try Self.seqParameter(context, "after") ?? 0
            let events = try await accounts.inGroup(context, group) { _, connection in
                try GroupEventLog().streamEvents(group: group, after: after, limit: limit, on: connection)
            }
            let items = events.map(\.itemJSON)
            return Self.page(items, next: events.count == limit ? events.last.map { String($0.seq) } : nil)
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/alerts") { context in
            let group = context.parameters.uuid("gid")!
            let limit = try context.limit()
            let before = try Self.seqParameter(context, "before")
            let status = context.request.target.queryValue("status")
            guard status == nil || status == AlertStatus.open.name || status == AlertStatus.closed.name else { throw APIError.invalid("status must be open or closed", "status") }
            let rows = try await accounts.inGroup(context, group) { _, connection in
                try MessageStore().alerts(group: group, status: status, before: before, limit: limit, on: connection)
            }
            return Self.page(rows.map(\.json), next: rows.count == limit ? rows.last.map { String($0.seq) } : nil)
        }
        builder.add(.get, "/v1/alerts") { context in
            let user = try await accounts.authenticate(context)
            let limit = try context.limit()
            let status = context.request.target.queryValue("status") ?? "open"
            guard status == "open" else { throw APIError.invalid("status must be open (closed alerts are listed per group)", "status") }
            let alerts = try await accounts.pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { try MessageStore().openAlerts(of: user.id, limit: limit, on: $0) }
            }
            return Self.page(alerts, next: nil)
        }
        builder.add(.post, "/v1/groups/{gid:uuid}/alerts/{seq:int}/ack", bodyLimit: 8 * 1024) { context in
            let (group, seq) = (context.parameters.uuid("gid")!, context.parameters.int("seq")!)
            let body = try context.decodeJSON(AckBody.self)
            guard Self.responses.contains(body.response) else { throw APIError.invalid("response must be seen, on_my_way or cannot_help", "response") }
            let note = try body.note.map { value throws(APIError) in try ProfileRoutes.text(value, field: "note", range: 0...1000, allowNewlines: true) }
            let json = try await accounts.inGroup(context, group) { caller, connection in
                guard let alert = try MessageStore().alertState(group: group, seq: seq, on: connection) else { throw Self.noSuchAlert }
                guard alert.status == AlertStatus.open.name else { throw APIError(.conflict, code: "conflict", message: "the alert is closed") }
                let user = caller.user
                try MessageStore().acknowledge(tenant: user.tenantID, group: group, seq: seq, user: user.id, response: body.response, note: note,
                                               on: connection)
                let data = "{\"seq\":\(seq),\"user_id\":\"\(user.id.uuidString.lowercased())\",\"display_name\":\(JSONString.quote(user.displayName)),"
                    + "\"response\":\(JSONString.quote(body.response)),\"note\":\(note.map(JSONString.quote) ?? "null")}"
                try GroupEventLog().append(tenant: user.tenantID, group: group, event: .alertAcknowledged, actorType: "user", actorID: user.id,
                                           data: RawJSON(data), on: connection)
                return try MessageStore().message(group: group, seq: seq, on: connection)!
            }
            return .json(.ok, Array(json.utf8))
        }
        builder.add(.post, "/v1/groups/{gid:uuid}/alerts/{seq:int}/close", bodyLimit: 8 * 1024) { context in
            try await changeAlert(context, close: true)
        }
        builder.add(.post, "/v1/groups/{gid:uuid}/alerts/{seq:int}/reopen", bodyLimit: 8 * 1024) { context in
            try await changeAlert(context, close: false)
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}/messages/{seq:int}") { context in
            let (group, seq) = (context.parameters.uuid("gid")!, context.parameters.int("seq")!)
            try await accounts.inGroup(context, group) { caller, connection in
                guard let message = try MessageStore().authorForRedaction(group: group, seq: seq, on: connection) else {
                    throw APIError(.notFound, code: "not_found", message: "no such message")
                }
                guard caller.isManager || message.authorID == caller.user.id else {
                    throw APIError(.forbidden, code: "forbidden", message: "only the author, the owner and admins can remove a message")
                }
                guard !message.redacted else { return }
                try MessageStore().redact(group: group, seq: seq, on: connection)
                try GroupEventLog().append(tenant: caller.user.tenantID, group: group, event: .messageRedacted, actorType: "user",
                                           actorID: caller.user.id, data: RawJSON("{\"seq\":\(seq)}"), on: connection)
            }
            return HTTPResponse(status: .noContent)
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/templates") { context in
            let group = context.parameters.uuid("gid")!
            let templates = try await accounts.inGroup(context, group) { _, connection in try TemplateStore().list(group: group, on: connection) }
            return try APIJSON.response(.ok, ["templates": templates])
        }
        builder.add(.put, "/v1/groups/{gid:uuid}/templates", bodyLimit: 64 * 1024) { context in
            let group = context.parameters.uuid("gid")!
            let body = try context.decodeJSON(TemplatesBody.self)
            let templates = try Self.validate(body.templates)
            try await accounts.inGroup(context, group) { caller, connection in
                try caller.requireManager("only the owner and admins change templates")
                try TemplateStore().replace(tenant: caller.user.tenantID, group: group, with: templates, on: connection)
            }
            return try APIJSON.response(.ok, ["templates": templates])
        }
    }

    static let noSuchAlert = APIError(.notFound, code: "not_found", message: "no such alert")

    static func validate(_ templates: [MessageTemplate]) throws(APIError) -> [MessageTemplate] {
        guard templates.count <= 50 else { throw APIError.invalid("at most 50 templates", "templates") }
        var keys: Set<String> = []
        var cleaned: [MessageTemplate] = []
        for (index, template) in templates.enumerated() {
            let field = "templates.\(index)"
            guard template.key.range(of: "^[a-z0-9_]{1,64}$", options: .regularExpression) != nil else {
                throw APIError.invalid("a template key is 1 to 64 of a-z, 0-9 and _", field + ".key")
            }
            guard keys.insert(template.key).inserted else { throw APIError.invalid("template keys must be unique", field + ".key") }
            guard template.kind == "chat" || template.kind == "alert" else { throw APIError.invalid("kind must be chat or alert", field + ".kind") }
            if let severity = template.severity, !severities.contains(severity) || template.kind == "chat" {
                throw APIError.invalid("severity is info, amber or red, and only for alerts", field + ".severity")
            }
            let text = try ProfileRoutes.text(template.text, field: field + ".text", range: 1...4000, allowNewlines: true)
            cleaned.append(MessageTemplate(key: template.key, text: text, kind: template.kind,
                                           severity: template.kind == "alert" ? (template.severity ?? "amber") : nil))
        }
        return cleaned
    }

    // MARK: - Use cases

    private func post(_ context: RequestContext) async throws -> HTTPResponse {
        let group = context.parameters.uuid("gid")!
        let body = try context.decodeJSON(PostBody.self)
        guard (1...200).contains(body.clientMessageID.count),
              !body.clientMessageID.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw APIError.invalid("client_msg_id must be 1 to 200 characters, no control characters", "client_msg_id")
        }
        guard body.kind == "chat" || body.kind == "alert" else { throw APIError.invalid("kind must be chat or alert", "kind") }
        if let severity = body.severity {
            guard body.kind == "alert", Self.severities.contains(severity) else {
                throw APIError.invalid("severity is info, amber or red, and only for alerts", "severity")
            }
        }
        let text = body.text.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
        if !(text.isEmpty && body.kind == "alert" && body.template != nil) {
            _ = try ProfileRoutes.text(text, field: "text", range: 1...4000, allowNewlines: true)
        }
        let locationJSON = try body.location?.validatedJSON()
        if let replyTo = body.replyTo, replyTo < 1 { throw APIError.invalid("reply_to must be a seq of this group", "reply_to") }
        let clientID = body.clientMessageID
        let location = locationJSON
        do {
            let (created, json) = try await accounts.inGroup(context, group) { caller, connection -> (Bool, String) in
                let store = MessageStore()
                var message = NewMessage(clientMessageID: clientID, text: text, kind: body.kind, severity: nil, template: nil,
                                         location: location, replyTo: body.replyTo)
                if let key = body.template {
                    guard let template = try TemplateStore().template(group: group, key: key, on: connection) else {
                        throw APIError.invalid("no such template in this group", "template")
                    }
                    message.template = key
                    if message.text.isEmpty { message.text = template.text }
                    if body.kind == "alert" && body.severity == nil { message.severity = template.severity }
                }
                if body.kind == "alert" { message.severity = body.severity ?? message.severity ?? "amber" }
                if let replyTo = body.replyTo, !(try store.exists(group: group, seq: replyTo, on: connection)) {
                    throw APIError.invalid("reply_to must be a seq of this group", "reply_to")
                }
                // Amber and red alerts reach people's phones: counted per member (a repeat rolls back with the insert).
                if message.severity.map({ AlertSeverity($0).raisesAlert }) == true {
                    // A client retrying an alert it already raised gets it back, whatever the limit.
                    if let earlier = try store.idempotent(group: group, author: caller.user.id, clientMessageID: clientID, on: connection) {
                        return (false, earlier)
                    }
                    let limit = accounts.limits.alertsPerUserPerHour
                    try Throttle.count([RateLimit("alert:\(caller.user.tenantID.uuidString):\(caller.user.id.uuidString)", limit: limit,
                                                  window: Throttle.hour)], "too many alerts raised this hour", on: connection)
                }
                // A repeated client_msg_id fails the insert (uniqueViolation), answered below.
                let posted = try store.post(tenant: caller.user.tenantID, group: group, authorType: "user", authorID: caller.user.id,
                                            authorName: caller.user.displayName, message: message, on: connection)
                if message.severity.map({ AlertSeverity($0).raisesAlert }) == true {
                    try OutboxStore().enqueueAlertPushes(group: group, excluding: caller.user.id, alert: RawJSON(posted.json), on: connection)
                }
                return (true, posted.json)
            }
            return .json(created ? .created : .ok, Array(json.utf8))
        } catch let error as DatabaseError where error.code == .uniqueViolation {
            // A concurrent repeat of the same client_msg_id won the race: answer with its message.
            let json = try await accounts.inGroup(context, group) { caller, connection in
                try MessageStore().idempotent(group: group, author: caller.user.id, clientMessageID: clientID, on: connection)
            }
            guard let json else { throw error }
            return .json(.ok, Array(json.utf8))
        }
    }

    /// Close (`close: true`) or reopen: the alert's author, the owner and admins.
    private func changeAlert(_ context: RequestContext, close: Bool) async throws -> HTTPResponse {
        let (group, seq) = (context.parameters.uuid("gid")!, context.parameters.int("seq")!)
        let resolution: String?
        if close {
            let body = context.request.body.isEmpty ? CloseBody(resolution: nil) : try context.decodeJSON(CloseBody.self)
            resolution = try body.resolution.map { value throws(APIError) in
                try ProfileRoutes.text(value, field: "resolution", range: 0...2000, allowNewlines: true)
            }
        } else {
            resolution = nil
        }
        let json = try await accounts.inGroup(context, group) { caller, connection in
            let store = MessageStore()
            guard let alert = try store.alertState(group: group, seq: seq, on: connection) else { throw Self.noSuchAlert }
            guard caller.isManager || alert.authorID == caller.user.id else {
                throw APIError(.forbidden, code: "forbidden", message: "only the alert's author, the owner and admins can \(close ? "close" : "reopen") it")
            }
            guard alert.status == (close ? AlertStatus.open : AlertStatus.closed).name else {
                throw APIError(.conflict, code: "conflict", message: close ? "the alert is closed already" : "the alert is open")
            }
            return try store.setAlert(closed: close, tenant: caller.user.tenantID, group: group, seq: seq, byType: "user", by: caller.user.id,
                                      resolution: resolution, on: connection)
        }
        return .json(.ok, Array(json.utf8))
    }
}
