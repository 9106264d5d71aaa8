import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Moderation and tenant administration", the group's half: reports, the queue, mutes
/// and blocks (`Moderation`). Non-members get 404; members without the right, 403.
struct ModerationRoutes: Sendable {
    let auth: Authentication

    struct ReportBody: Decodable, KnownFields {
        let reason: String
        static let fieldNames: Set<String> = ["reason"]
    }

    struct CloseBody: Decodable, KnownFields {
        let action: String
        static let fieldNames: Set<String> = ["action"]
    }

    struct MuteBody: Decodable, KnownFields {
        let minutes: Int
        static let fieldNames: Set<String> = ["minutes"]
    }

    static func muted(_ member: UUID, until: Date?) -> HTTPResponse {
        .json(.ok, Array("{\"user_id\":\"\(member.lowercasedText)\",\"muted_until\":\(until.map { JSONString.quote(APIJSON.time($0)) } ?? "null")}".utf8))
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.post, "/v1/groups/{gid:uuid}/messages/{seq:int}/report", bodyLimit: 8 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(ReportBody.self)
            let report = try await caller.run(try ReportMessage(group: context.parameters.uuid("gid")!, seq: context.parameters.int("seq")!,
                                                                reason: body.reason))
            return .json(.created, Array(Moderation.json(report).utf8))
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/reports", signedIn: auth) { context, caller in
            let limit = try context.limit()
            let list = try ListReports(group: context.parameters.uuid("gid")!, status: context.request.target.queryValue("status"),
                                       before: try context.cursor(\.newestFirst, name: "before"), limit: limit)
            let reports = try await caller.run(list)
            let next = reports.count == limit ? reports.last.map { ListCursor.write(NewestFirst($0.createdAt, $0.id)) } : nil
            return .json(.ok, Array("{\"items\":[\(reports.map(Moderation.json).joined(separator: ","))],\"next\":\(next.map(JSONString.quote) ?? "null")}".utf8))
        }
        builder.add(.post, "/v1/groups/{gid:uuid}/reports/{rid:uuid}/close", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(CloseBody.self)
            let report = try await caller.run(try CloseReport(group: context.parameters.uuid("gid")!, report: context.parameters.uuid("rid")!,
                                                              action: body.action))
            return .json(.ok, Array(Moderation.json(report).utf8))
        }
        builder.add(.post, "/v1/groups/{gid:uuid}/members/{uid:uuid}/mute", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(MuteBody.self)
            let member = context.parameters.uuid("uid")!
            let until = try await caller.run(try MuteMember(group: context.parameters.uuid("gid")!, member: member, minutes: body.minutes))
            return Self.muted(member, until: until)
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}/members/{uid:uuid}/mute", signedIn: auth) { context, caller in
            let member = context.parameters.uuid("uid")!
            let until = try await caller.run(try MuteMember(group: context.parameters.uuid("gid")!, member: member, minutes: nil))
            return Self.muted(member, until: until)
        }
        builder.add(.post, "/v1/groups/{gid:uuid}/members/{uid:uuid}/block", signedIn: auth) { context, caller in
            try await caller.run(BlockMember(group: context.parameters.uuid("gid")!, member: context.parameters.uuid("uid")!))
            return HTTPResponse(status: .noContent)
        }
    }
}
