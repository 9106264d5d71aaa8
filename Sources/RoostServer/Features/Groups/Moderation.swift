import Foundation
import RoostPersistence
import RoostProtocol

/// Moderation in a group (API.md "Moderation and tenant administration"): a member reports a
/// message to the group's managers; the owner, admins and the tenant's coordinators work the
/// queue, remove messages, mute a member for a time and block one from coming back. Every
/// manager's action is audited.
enum Moderation {
    /// Reports one member may file in an hour, across the tenant: each reaches every manager's
    /// streams and phones.
    static let reportsPerHour = 10
    /// Report pushes to one group's managers in an hour; beyond, the reports still reach the
    /// queue and the managers' streams.
    static let reportPushesPerGroupPerHour = 20
    /// The longest mute: 30 days.
    static let muteMinutes = 1...43_200

    /// The owner, the admins and the tenant's coordinators: who hear of a report.
    static func managers(of group: UUID, on connection: PostgresConnection) throws -> [UUID] {
        try connection.query("""
            SELECT user_id AS id FROM memberships WHERE group_id = \(group) AND role IN ('owner', 'admin')
            UNION
            SELECT id FROM users WHERE coordinator AND deleted_at IS NULL AND suspended_at IS NULL
            """).rows.map { try $0.decode(UUID.self, "id") }
    }

    /// 404 unless `member` is in the group, 403 unless the caller may act on them: never the
    /// owner, an admin only by the owner, and never oneself.
    static func requireModeratable(_ member: UUID, by caller: GroupCaller, group: UUID, action: String, on connection: PostgresConnection) throws {
        try caller.requireManager("only the owner, admins and coordinators can \(action) members")
        guard let role = try GroupStore().role(of: member, in: group, on: connection) else { throw APIError.noSuchMember }
        guard member != caller.user.id else { throw APIError.forbidden("you cannot \(action) yourself") }
        guard role != .owner else { throw APIError.forbidden("the owner cannot be \(action == "mute" ? "muted" : "blocked")") }
        if role == .admin { try caller.requireOwner("only the owner can \(action) an admin") }
    }

    /// `{id, group_id, seq, reason, status, action, created_at, closed_at, reporter: {id, display_name}, message: {text, removed, author: {type, id, display_name}}}`.
    static func json(_ report: MessageReport) -> String {
        func quote(_ text: String?) -> String { text.map(JSONString.quote) ?? "null" }
        return "{\"id\":\"\(report.id.lowercasedText)\",\"group_id\":\"\(report.groupID.lowercasedText)\",\"seq\":\(report.seq),"
            + "\"reason\":\(JSONString.quote(report.reason)),\"status\":\(JSONString.quote(report.status)),\"action\":\(quote(report.action)),"
            + "\"created_at\":\(JSONString.quote(APIJSON.time(report.createdAt))),\"closed_at\":\(quote(report.closedAt.map(APIJSON.time))),"
            + "\"reporter\":{\"id\":\(quote(report.reporterID?.lowercasedText)),\"display_name\":\(quote(report.reporterName))},"
            + "\"message\":{\"text\":\(JSONString.quote(report.messageText)),\"removed\":\(report.messageRedacted),"
            + "\"author\":{\"type\":\(JSONString.quote(report.authorType)),\"id\":\(quote(report.authorID?.lowercasedText)),"
            + "\"display_name\":\(quote(report.authorName))}}}"
    }
}

/// A member reports a message: 201 with the open report; 409 when they have one open for it.
/// The group's managers get a `report.created` notice, and a push (a group's managers at most
/// `reportPushesPerGroupPerHour` an hour).
struct ReportMessage: GroupUseCase {
    let group: UUID
    let seq: Int64
    let reason: String

    init(group: UUID, seq: Int64, reason: String) throws(APIError) {
        self.group = group
        self.seq = seq
        self.reason = try BoundedText.validate(BoundedText.trimmed(reason), field: "reason", range: 1...1000, allowNewlines: true)
    }

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> MessageReport {
        let tenant = caller.user.tenantID
        try Throttle.count([RateLimit(RateLimitKey(.reportSent, tenant.uuidString, caller.user.id.uuidString), limit: Moderation.reportsPerHour,
                                      window: Throttle.hour)],
                           "too many reports this hour; the managers have them", on: connection)
        let store = ModerationStore()
        switch try store.report(tenant: tenant, group: group, seq: seq, reporter: caller.user.id, reason: reason, on: connection) {
        case .noMessage: throw APIError(.notFound, code: .notFound, message: "no such message")
        case .duplicate: throw APIError(.conflict, code: .conflict, message: "you have reported this message already; the managers have it")
        case .created(let id):
            let report = try store.report(id, group: group, on: connection)!
            let groupName = try GroupStore().group(id: group, on: connection)?.name ?? ""
            let data = Moderation.json(report)
            let pushed = try AlertPushes.allowed(RateLimit(RateLimitKey(.reportPush, tenant.uuidString, group.uuidString),
                                                           limit: Moderation.reportPushesPerGroupPerHour, window: Throttle.hour), on: connection)
            let push = "{\"group_id\":\"\(group.lowercasedText)\",\"seq\":\(seq),\"group_name\":\(JSONString.quote(groupName)),\"report\":\(data)}"
            // Not to whom the message is hidden from: a duress alert's walker must not learn of it.
            for manager in try Moderation.managers(of: group, on: connection) where manager != caller.user.id && manager != report.messageHiddenFrom {
                try GroupEventLog.notifyUser(tenant: tenant, user: manager, event: .reportCreated, data: data, on: connection)
                if pushed { try OutboxStore().enqueuePushes(to: manager, template: .reportCreated, data: RawJSON(push), on: connection) }
            }
            return report
        }
    }
}

/// The queue: a group's open (or closed) reports, newest first, for its managers.
struct ListReports: GroupUseCase {
    let group: UUID
    let status: String
    let before: NewestFirst?
    let limit: Int

    init(group: UUID, status: String?, before: NewestFirst?, limit: Int) throws(APIError) {
        guard ["open", "closed"].contains(status ?? "open") else { throw APIError.invalid("status is open or closed", "status") }
        self.group = group
        self.status = status ?? "open"
        self.before = before
        self.limit = limit
    }

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> [MessageReport] {
        try caller.requireManager("only the owner, admins and coordinators read the reports")
        return try ModerationStore().reports(group: group, status: status, before: before, limit: limit, on: connection)
    }
}

/// A manager closes a report, having done nothing (`none`) or removed the message (`removed`,
/// which removes it now if it is not yet, and closes the message's other open reports).
struct CloseReport: GroupUseCase {
    let group: UUID
    let report: UUID
    let action: String

    init(group: UUID, report: UUID, action: String) throws(APIError) {
        guard ["none", "removed"].contains(action) else { throw APIError.invalid("action is none or removed", "action") }
        self.group = group
        self.report = report
        self.action = action
    }

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> MessageReport {
        try caller.requireManager("only the owner, admins and coordinators close reports")
        let store = ModerationStore()
        guard let found = try store.report(report, group: group, on: connection) else {
            throw APIError(.notFound, code: .notFound, message: "no such report")
        }
        guard found.status == "open", try store.close(report, group: group, action: action, by: caller.user.id, on: connection) else {
            throw APIError(.conflict, code: .conflict, message: "the report is closed already")
        }
        if action == "removed" {
            try RedactMessage(group: group, seq: found.seq).run(by: caller, on: connection)
            try store.closeOthers(group: group, seq: found.seq, by: caller.user.id, on: connection)
        }
        // Hidden from whom the message is hidden from, as its removal is.
        try AuditLog().record(tenant: caller.user.tenantID, group: group, actor: .user(caller.user.id), action: .reportClosed,
                              target: ("report", report.lowercasedText), data: "{\"action\":\(JSONString.quote(action)),\"seq\":\(found.seq)}",
                              hiddenFrom: found.messageHiddenFrom, on: connection)
        return try store.report(report, group: group, on: connection)!
    }
}

/// A manager mutes a member for `minutes` (a new mute replaces the old), or lifts it (`minutes`
/// nil): `{user_id, muted_until}`.
struct MuteMember: GroupUseCase {
    let group: UUID
    let member: UUID
    let minutes: Int?

    init(group: UUID, member: UUID, minutes: Int?) throws(APIError) {
        if let minutes, !Moderation.muteMinutes.contains(minutes) {
            throw APIError.invalid("minutes is 1 to \(Moderation.muteMinutes.upperBound) (30 days)", "minutes")
        }
        self.group = group
        self.member = member
        self.minutes = minutes
    }

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> Date? {
        try Moderation.requireModeratable(member, by: caller, group: group, action: "mute", on: connection)
        let until = minutes.map { Date().addingTimeInterval(Double($0) * 60) }
        let store = ModerationStore()
        _ = try store.mute(member, in: group, until: until, on: connection)
        try Audit.record(caller, group: group, minutes == nil ? .memberUnmuted : .memberMuted, target: ("user", member.lowercasedText),
                         data: minutes.map { "{\"minutes\":\($0)}" } ?? "{}", on: connection)
        return try store.mutedUntil(member, in: group, on: connection)
    }
}

/// A manager removes a member and blocks them: invitations to the addresses they have now, for
/// this group, are refused, and so is their accepting one.
struct BlockMember: GroupUseCase {
    let group: UUID
    let member: UUID

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws {
        try Moderation.requireModeratable(member, by: caller, group: group, action: "block", on: connection)
        try ModerationStore().block(member, in: group, tenant: caller.user.tenantID, by: caller.user.id, on: connection)
        try GroupStore().removeMember(member, from: group, on: connection)
        try LiveLocationNotice.endAll(of: member, tenant: caller.user.tenantID, group: group, on: connection)
        try GroupEventLog().append(tenant: caller.user.tenantID, group: group, event: .memberRemoved, actorType: .user, actorID: caller.user.id,
                                   data: RawJSON(#"{"user_id":"\#(member.lowercasedText)"}"#), subject: member, on: connection)
        try Audit.record(caller, group: group, .memberBlocked, target: ("user", member.lowercasedText), on: connection)
    }
}
