import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol

/// A group's audit (API.md "Accounts"): who changed roles, removed members, sent and revoked
/// invitations, created and revoked bridges, closed and reopened alerts, replaced templates,
/// changed settings and escalation contacts, newest first, for its owner and admins (403 for
/// members, 404 for anyone else). Written by the changes themselves (`Audit.record`).
struct AuditRoutes: Sendable {
    let auth: Authentication

    /// `{id, at, group_id, actor: {type, id, display_name}, action, target: {type, id, name} | null, data}`.
    static func json(_ entry: AuditEntry) -> String {
        func quote(_ text: String?) -> String { text.map(JSONString.quote) ?? "null" }
        let target = entry.targetType.map {
            "{\"type\":\(JSONString.quote($0)),\"id\":\(quote(entry.targetID)),\"name\":\(quote(entry.targetName))}"
        } ?? "null"
        return "{\"id\":\"\(entry.id.lowercasedText)\",\"at\":\(JSONString.quote(APIJSON.time(entry.at))),"
            + "\"group_id\":\(quote(entry.groupID?.lowercasedText)),"
            + "\"actor\":{\"type\":\(JSONString.quote(entry.actorType)),\"id\":\(quote(entry.actorID?.lowercasedText)),"
            + "\"display_name\":\(quote(entry.actorName))},\"action\":\(JSONString.quote(entry.action.name)),\"target\":\(target),\"data\":\(entry.data)}"
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.get, "/v1/groups/{gid:uuid}/audit", signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let limit = try context.limit()
            let before = try context.cursor(\.newestFirst, name: "before")
            let entries = try await caller.inGroup(group) { caller, connection in
                try caller.requireManager("only the owner and admins read the audit")
                return try AuditLog().entries(group: group, before: before, limit: limit, on: connection)
            }
            let next = entries.count == limit ? entries.last.map { ListCursor.write(NewestFirst($0.at, $0.id)) } : nil
            return .json(.ok, Array("{\"items\":[\(entries.map(Self.json).joined(separator: ","))],\"next\":\(next.map(JSONString.quote) ?? "null")}".utf8))
        }
    }
}
