import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Groups and members": the member list, roles, removal, leaving and ownership
/// transfer. Non-members get 404 (the group stays invisible); members without the right get
/// 403. Each change appends its event in the same transaction.
struct MembershipRoutes: Sendable {
    let auth: Authentication

    struct RoleBody: Decodable, KnownFields {
        let role: String
        static let fieldNames: Set<String> = ["role"]
    }

    struct OwnerBody: Decodable, KnownFields {
        let userID: UUID
        enum CodingKeys: String, CodingKey { case userID = "user_id" }
        static let fieldNames: Set<String> = ["user_id"]
    }

    struct MemberView: Encodable {
        @LowercaseID var userID: UUID
        let displayName: String
        let role: String
        let joinedAt: Date

        init(_ member: Member) {
            userID = member.userID
            displayName = member.displayName
            role = member.role
            joinedAt = member.joinedAt
        }

        enum CodingKeys: String, CodingKey {
            case role
            case userID = "user_id"
            case displayName = "display_name"
            case joinedAt = "joined_at"
        }
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.get, "/v1/groups/{gid:uuid}/members", signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let limit = try context.limit()
            let after = try context.cursor { cursor -> MemberPosition? in
                guard cursor.count == 3, let rank = cursor.integer(0), (0...2).contains(rank), let joined = cursor.integer(1),
                      let user = cursor.id(2) else { return nil }
                return MemberPosition(rank: Int(rank), joinedMicros: joined, user: user)
            }
            let members = try await caller.inGroup(group) { _, connection in
                try GroupStore().members(of: group, after: after, limit: limit, on: connection)
            }
            let next = members.count == limit ? members.last.map {
                ListCursor.write(String($0.position.rank), String($0.position.joinedMicros), $0.position.user.lowercasedText)
            } : nil
            return try APIJSON.response(.ok, Page(items: members.map { MemberView($0.member) }, next: next))
        }
        builder.add(.patch, "/v1/groups/{gid:uuid}/members/{uid:uuid}", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(RoleBody.self)
            let change = try ChangeRole(group: context.parameters.uuid("gid")!, member: context.parameters.uuid("uid")!, role: body.role)
            return try APIJSON.response(.ok, MemberView(try await caller.run(change)))
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}/members/{uid:uuid}", signedIn: auth) { context, caller in
            try await caller.run(RemoveMember(group: context.parameters.uuid("gid")!, member: context.parameters.uuid("uid")!))
            return HTTPResponse(status: .noContent)
        }
        builder.add(.post, "/v1/groups/{gid:uuid}/owner", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let body = try context.decodeJSON(OwnerBody.self)
            try await caller.run(TransferOwnership(group: group, newOwner: body.userID))
            let (found, role) = try await caller.inGroup(group) { caller, connection in (try GroupStore().group(id: group, on: connection)!, caller.role) }
            return try APIJSON.response(.ok, GroupView(found, role: role))
        }
    }
}
