import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Messages and alerts": posting (idempotent on `client_msg_id`), reading the
/// messages and the event log, alerts with their lifecycle (ack, close, reopen), redaction and
/// templates. Every change is one event on the group's log, written with its projections in
/// one transaction; the stream picks it up from there.
struct MessageRoutes: Sendable {
    let auth: Authentication
    let limits: AbuseLimits
    let pace: PostPace
    /// Plain chat lines posted at the same time share one commit.
    let chatLines: ChatLineCommits

    init(auth: Authentication, limits: AbuseLimits) {
        self.auth = auth
        self.limits = limits
        pace = PostPace(perMinute: limits.postsPerAccountPerMinute, now: limits.postPaceClock)
        chatLines = ChatLineCommits(pool: auth.pool, sessionLifetime: auth.sessionLifetime, sessionMaxAge: auth.sessionMaxAge)
    }

    struct PostBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let clientMessageID: String
        let text: String?
        let kind: String
        let severity: String?
        let template: String?
        let location: Location?
        let replyTo: Int64?
        let attachments: [UUID]?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case text, kind, severity, template, location, attachments
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

    struct ReadBody: Decodable, KnownFields {
        let seq: Int64
        static let fieldNames: Set<String> = ["seq"]
    }

    struct TemplatesBody: Decodable, KnownFields {
        let templates: [MessageTemplate]
        static let fieldNames: Set<String> = ["templates"]
    }

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
        builder.add(.post, "/v1/groups/{gid:uuid}/messages", bodyLimit: 64 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(PostBody.self)
            let post = try PostMessage(group: context.parameters.uuid("gid")!, clientMessageID: body.clientMessageID, kind: MessageKind(body.kind),
                                       text: body.text, severity: body.severity, template: body.template, location: body.location,
                                       replyTo: body.replyTo, attachments: body.attachments ?? [], alertsPerHour: limits.alertsPerUserPerHour,
                                       pace: pace)
            var usual = post
            // A plain chat line from a session this node knows shares a commit with the lines
            // posted at the same time; one the shared statement declines goes the usual way.
            if post.isPlainChat, let user = chatLines.owner(of: caller.token.hash), pace.take(user) == nil {
                if case .posted(_, let json) = try await chatLines.post(post.chatLine(by: caller.token, user: user)) {
                    return .json(.created, Array(json.utf8))
                }
                usual = post.paced
            }
            do {
                let ((created, json), user) = try await caller.runTelling(usual)
                if post.isPlainChat { chatLines.learn(caller.token.hash, is: user) }
                // Its pushes are in: the delivery engine need not wait for its next look.
                if created, post.severity.map({ AlertSeverity($0).raisesAlert }) == true { DeliveryBell.shared.ring() }
                return .json(created ? .created : .ok, Array(json.utf8))
            } catch let error as DatabaseError where error.code == .uniqueViolation {
                // A concurrent repeat of the same client_msg_id won the race: answer with its message.
                guard let json = try await caller.run(usual.repeated) else { throw error }
                return .json(.ok, Array(json.utf8))
            }
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/messages", signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let (limit, before) = (try context.limit(), try Self.seqParameter(context, "before"))
            let rows = try await caller.inGroup(group) { _, connection in
                try MessageStore().messages(group: group, before: before, limit: limit, on: connection)
            }
            return Self.page(rows.map(\.json), next: rows.count == limit ? rows.last.map { String($0.seq) } : nil)
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/messages/{seq:int}", signedIn: auth) { context, caller in
            let (group, seq) = (context.parameters.uuid("gid")!, context.parameters.int("seq")!)
            let json = try await caller.inGroup(group) { caller, connection in
                try MessageStore().detail(group: group, seq: seq, showNearby: caller.isManager, on: connection)
            }
            guard let json else { throw APIError(.notFound, code: .notFound, message: "no such message") }
            return .json(.ok, Array(json.utf8))
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/messages/{seq:int}/replies", signedIn: auth) { context, caller in
            let (group, seq) = (context.parameters.uuid("gid")!, context.parameters.int("seq")!)
            let (limit, after) = (try context.limit(), try Self.seqParameter(context, "after") ?? 0)
            let rows = try await caller.inGroup(group) { _, connection -> [(seq: Int64, json: String)]? in
                guard try MessageStore().exists(group: group, seq: seq, on: connection) else { return nil }
                return try MessageStore().replies(group: group, to: seq, after: after, limit: limit, on: connection)
            }
            guard let rows else { throw APIError(.notFound, code: .notFound, message: "no such message") }
            return Self.page(rows.map(\.json), next: rows.count == limit ? rows.last.map { String($0.seq) } : nil)
        }
        builder.add(.post, "/v1/groups/{gid:uuid}/read", bodyLimit: 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(ReadBody.self)
            try await caller.run(MarkRead(group: context.parameters.uuid("gid")!, seq: body.seq))
            return HTTPResponse(status: .noContent)
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/events", signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let (limit, after) = (try context.limit(), try Self.seqParameter(context, "after") ?? 0)
            let read = try await caller.inGroup(group) { _, connection in
                try GroupEventLog().resumeEvents(group: group, after: after, limit: limit, on: connection)
            }
            switch read {
            case .events(let events):
                return Self.page(events.map(\.itemJSON), next: events.count == limit ? events.last.map { String($0.seq) } : nil)
            case .expired(let oldest):
                var expired = APIError(.gone, code: .expired,
                                       message: "events after \(after) were purged by the group's retention; reload the group, then resume from oldest_seq - 1")
                expired.details["oldest_seq"] = oldest
                throw expired
            }
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/alerts", signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let (limit, before) = (try context.limit(), try Self.seqParameter(context, "before"))
            let status = context.request.target.queryValue("status")
            guard status == nil || status == AlertStatus.open.name || status == AlertStatus.closed.name else { throw APIError.invalid("status must be open or closed", "status") }
            let rows = try await caller.inGroup(group) { _, connection in
                try MessageStore().alerts(group: group, status: status, before: before, limit: limit, on: connection)
            }
            return Self.page(rows.map(\.json), next: rows.count == limit ? rows.last.map { String($0.seq) } : nil)
        }
        builder.add(.get, "/v1/alerts", signedIn: auth) { context, caller in
            let limit = try context.limit()
            let status = context.request.target.queryValue("status") ?? AlertStatus.open.name
            guard status == AlertStatus.open.name else { throw APIError.invalid("status must be open (closed alerts are listed per group)", "status") }
            let after = try context.cursor { cursor -> MessageStore.AlertPosition? in
                guard cursor.count == 3, let opened = cursor.integer(0), let group = cursor.id(1), let seq = cursor.integer(2) else { return nil }
                return MessageStore.AlertPosition(openedMicros: opened, group: group, seq: seq)
            }
            let alerts = try await caller.inTenant { user, connection in
                try MessageStore().openAlerts(of: user.id, after: after, limit: limit, on: connection)
            }
            let next = alerts.count == limit ? alerts.last.map {
                ListCursor.write(String($0.position.openedMicros), $0.position.group.lowercasedText, String($0.position.seq))
            } : nil
            return Self.page(alerts.map(\.json), next: next)
        }
        builder.add(.post, "/v1/groups/{gid:uuid}/alerts/{seq:int}/ack", bodyLimit: 8 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(AckBody.self)
            let json = try await caller.run(AcknowledgeAlert(group: context.parameters.uuid("gid")!, seq: context.parameters.int("seq")!,
                                                             response: body.response, note: body.note))
            return .json(.ok, Array(json.utf8))
        }
        builder.add(.post, "/v1/groups/{gid:uuid}/alerts/{seq:int}/close", bodyLimit: 8 * 1024, signedIn: auth) { context, caller in
            let body = context.request.body.isEmpty ? CloseBody(resolution: nil) : try context.decodeJSON(CloseBody.self)
            let json = try await caller.run(CloseAlert(group: context.parameters.uuid("gid")!, seq: context.parameters.int("seq")!,
                                                       resolution: body.resolution))
            return .json(.ok, Array(json.utf8))
        }
        builder.add(.post, "/v1/groups/{gid:uuid}/alerts/{seq:int}/reopen", bodyLimit: 8 * 1024, signedIn: auth) { context, caller in
            let json = try await caller.run(ReopenAlert(group: context.parameters.uuid("gid")!, seq: context.parameters.int("seq")!))
            return .json(.ok, Array(json.utf8))
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}/messages/{seq:int}", signedIn: auth) { context, caller in
            try await caller.run(RedactMessage(group: context.parameters.uuid("gid")!, seq: context.parameters.int("seq")!))
            return HTTPResponse(status: .noContent)
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/templates", signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let templates = try await caller.inGroup(group) { _, connection in try TemplateStore().list(group: group, on: connection) }
            return try APIJSON.response(.ok, ["templates": templates])
        }
        builder.add(.put, "/v1/groups/{gid:uuid}/templates", bodyLimit: 64 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(TemplatesBody.self)
            let replace = try ReplaceTemplates(group: context.parameters.uuid("gid")!, templates: body.templates)
            try await caller.run(replace)
            return try APIJSON.response(.ok, ["templates": replace.templates])
        }
    }
}
