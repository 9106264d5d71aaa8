import Foundation
import RoostPersistence
import RoostProtocol

/// A member answers an open alert: seen, on my way, or cannot help, with an optional note.
/// The answer is kept per member (a second answer replaces the first) and is an event.
struct AcknowledgeAlert: GroupUseCase {
    let group: UUID
    let seq: Int64
    let response: String
    let note: String?

    static let responses: Set<String> = ["seen", "on_my_way", "cannot_help"]

    init(group: UUID, seq: Int64, response: String, note: String?) throws(APIError) {
        guard Self.responses.contains(response) else { throw APIError.invalid("response must be seen, on_my_way or cannot_help", "response") }
        self.note = try note.map { value throws(APIError) in try BoundedText.validate(value, field: "note", range: 0...1000, allowNewlines: true) }
        self.group = group
        self.seq = seq
        self.response = response
    }

    /// The alert's JSON after the answer.
    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> String {
        let store = MessageStore()
        guard let alert = try store.alertState(group: group, seq: seq, on: connection) else { throw APIError.noSuchAlert }
        guard alert.status == AlertStatus.open.name else { throw APIError(.conflict, code: .conflict, message: "the alert is closed") }
        let user = caller.user
        try store.acknowledge(tenant: user.tenantID, group: group, seq: seq, user: user.id, response: response, note: note, on: connection)
        try LiveLocationNotice.endForAnswer(response, user: user.id, author: alert.authorID, tenant: user.tenantID, group: group, seq: seq,
                                            on: connection)
        let data = "{\"seq\":\(seq),\"user_id\":\"\(user.id.lowercasedText)\",\"display_name\":\(JSONString.quote(user.displayName)),"
            + "\"response\":\(JSONString.quote(response)),\"note\":\(note.map(JSONString.quote) ?? "null")}"
        try GroupEventLog().append(tenant: user.tenantID, group: group, event: .alertAcknowledged, actorType: .user, actorID: user.id,
                                   data: RawJSON(data), hiddenFrom: alert.hiddenFrom, on: connection)
        // The author of an alert hidden from them (a duress alert's walker) hears nothing of it.
        try AlertPushes.response(group: group, seq: seq, author: alert.authorID == alert.hiddenFrom ? nil : alert.authorID, responder: user,
                                 response: response, note: note, reply: nil, on: connection)
        return try store.message(group: group, seq: seq, on: connection)!
    }
}

/// The alert's author, the owner or an admin closes an open alert, with an optional resolution.
struct CloseAlert: GroupUseCase {
    let group: UUID
    let seq: Int64
    let resolution: String?

    init(group: UUID, seq: Int64, resolution: String?) throws(APIError) {
        self.resolution = try resolution.map { value throws(APIError) in
            try BoundedText.validate(value, field: "resolution", range: 0...2000, allowNewlines: true)
        }
        self.group = group
        self.seq = seq
    }

    /// The alert's JSON, closed.
    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> String {
        try AlertStatusChange(group: group, seq: seq, close: true, resolution: resolution).run(by: caller, on: connection)
    }
}

/// The alert's author, the owner or an admin opens a closed alert again.
struct ReopenAlert: GroupUseCase {
    let group: UUID
    let seq: Int64

    /// The alert's JSON, open.
    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> String {
        try AlertStatusChange(group: group, seq: seq, close: false, resolution: nil).run(by: caller, on: connection)
    }
}

/// What closing and reopening share: who may, and from which status; and, for every way an
/// alert's status changes (a member's close or reopen, a bridge's resolve), `apply`.
struct AlertStatusChange {
    let group: UUID
    let seq: Int64
    let close: Bool
    let resolution: String?

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> String {
        let store = MessageStore()
        guard let alert = try store.alertState(group: group, seq: seq, on: connection) else { throw APIError.noSuchAlert }
        guard caller.isManager || alert.authorID == caller.user.id else {
            throw APIError.forbidden("only the alert's author, the owner and admins can \(close ? "close" : "reopen") it")
        }
        guard alert.status == (close ? AlertStatus.open : AlertStatus.closed).name else {
            throw APIError(.conflict, code: .conflict, message: close ? "the alert is closed already" : "the alert is open")
        }
        return try Self.apply(closed: close, tenant: caller.user.tenantID, group: group, seq: seq, by: (.user, caller.user.id),
                              resolution: resolution, on: connection)
    }

    /// Closes or reopens an alert the caller has locked and checked: the change and its event,
    /// the push to everyone the alert went to (the all clear, or the alert again), the end of
    /// its live locations (closed) or a fresh escalation (reopened). The alert's JSON as it is now.
    /// `push: false` leaves the push out (a close forced by a duress answer: the silent alert
    /// that follows it is what reaches phones, not an all clear).
    static func apply(closed: Bool, tenant: UUID, group: UUID, seq: Int64, by: (type: ActorType, id: UUID), resolution: String?,
                      push: Bool = true, on connection: PostgresConnection) throws -> String {
        if closed {
            // Help is no longer on the way: every live location of the alert ends (told before the close itself).
            try LiveLocationNotice.endAll(tenant: tenant, group: group, seq: seq, on: connection)
        } else {
            // Opened again: a red alert escalates again from the start if nobody comes.
            try EscalationStore().setLevel(0, group: group, seq: seq, on: connection)
        }
        let json = try MessageStore().setAlert(closed: closed, tenant: tenant, group: group, seq: seq, byType: by.type, by: by.id,
                                               resolution: resolution, on: connection)
        try AuditLog().record(tenant: tenant, group: group, actor: AuditLog.Actor(type: by.type, id: by.id), action: closed ? .alertClosed : .alertReopened,
                              target: ("alert", String(seq)), data: "{\"resolution\":\(resolution.map(JSONString.quote) ?? "null")}",
                              hiddenFrom: try MessageStore().hiddenFrom(group: group, seq: seq, on: connection), on: connection)
        if !closed { try EscalationStore().schedule(tenant: tenant, group: group, seq: seq, on: connection) }
        if push { try AlertPushes.statusChanged(group: group, seq: seq, closed: closed, alert: json, tenant: tenant, on: connection) }
        return json
    }
}

/// The author, the owner or an admin removes a message's content; the event stays, saying it
/// was removed, and the audit log keeps who did it (`message.redacted`). Removing a removed
/// message changes nothing.
struct RedactMessage: GroupUseCase {
    let group: UUID
    let seq: Int64

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws {
        let store = MessageStore()
        guard let message = try store.authorForRedaction(group: group, seq: seq, on: connection) else {
            throw APIError(.notFound, code: .notFound, message: "no such message")
        }
        guard caller.isManager || message.authorID == caller.user.id else {
            throw APIError.forbidden("only the author, the owner and admins can remove a message")
        }
        guard !message.redacted else { return }
        try store.redact(group: group, seq: seq, on: connection)
        try GroupEventLog().append(tenant: caller.user.tenantID, group: group, event: .messageRedacted, actorType: .user,
                                   actorID: caller.user.id, data: RawJSON("{\"seq\":\(seq)}"), hiddenFrom: message.hiddenFrom, on: connection)
        // Hidden from whom the message was (a duress alert's walker): its removal is too.
        try AuditLog().record(tenant: caller.user.tenantID, group: group, actor: .user(caller.user.id), action: .messageRedacted,
                              target: ("message", String(seq)), data: "{\"by_author\":\(message.authorID == caller.user.id)}",
                              hiddenFrom: message.hiddenFrom, on: connection)
    }
}

/// The owner or an admin replaces the group's message templates (at most 50, unique keys).
struct ReplaceTemplates: GroupUseCase {
    let group: UUID
    let templates: [MessageTemplate]

    init(group: UUID, templates: [MessageTemplate]) throws(APIError) {
        guard templates.count <= 50 else { throw APIError.invalid("at most 50 templates", "templates") }
        var keys: Set<String> = []
        var cleaned: [MessageTemplate] = []
        for (index, template) in templates.enumerated() {
            let field = "templates.\(index)"
            guard (1...64).contains(template.key.utf8.count),
                  template.key.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }) else {
                throw APIError.invalid("a template key is 1 to 64 of a-z, 0-9 and _", field + ".key")
            }
            guard keys.insert(template.key).inserted else { throw APIError.invalid("template keys must be unique", field + ".key") }
            guard template.kind == .chat || template.kind == .alert else { throw APIError.invalid("kind must be chat or alert", field + ".kind") }
            if let severity = template.severity, !AlertSeverity(severity).isKnown || template.kind == .chat {
                throw APIError.invalid("severity is info, amber or red, and only for alerts", field + ".severity")
            }
            let text = try BoundedText.validate(template.text, field: field + ".text", range: 1...4000, allowNewlines: true)
            cleaned.append(MessageTemplate(key: template.key, text: text, kind: template.kind,
                                           severity: template.kind == .alert ? (template.severity ?? AlertSeverity.amber.name) : nil))
        }
        self.group = group
        self.templates = cleaned
    }

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws {
        try caller.requireManager("only the owner and admins change templates")
        try TemplateStore().replace(tenant: caller.user.tenantID, group: group, with: templates, on: connection)
        let keys = templates.map { JSONString.quote($0.key) }.joined(separator: ",")
        try Audit.record(caller, group: group, .templatesReplaced, target: ("templates", group.lowercasedText),
                         data: "{\"keys\":[\(keys)]}", on: connection)
    }
}

extension APIError {
    static let noSuchAlert = APIError(.notFound, code: .notFound, message: "no such alert")
}
