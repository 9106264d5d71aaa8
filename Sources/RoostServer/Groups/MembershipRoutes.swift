import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Groups and members": editing and deleting groups, roles, removal, leaving and
/// ownership transfer. Non-members get 404 (the group stays invisible); members without the
/// right get 403. Each change appends its event in the same transaction.
struct MembershipRoutes: Sendable {
    let accounts: AccountRoutes

    struct PatchGroupBody: Decodable, KnownFields {
        let name: String?
        let description: String?
        static let fieldNames: Set<String> = ["name", "description"]
    }

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

        enum CodingKeys: String, CodingKey {
            case role
            case userID = "user_id"
            case displayName = "display_name"
            case joinedAt = "joined_at"
        }
    }

    static func forbidden(_ message: String) -> APIError {
        APIError(.forbidden, code: "forbidden", message: message)
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.get, "/v1/groups/{gid:uuid}/members") { context in
            let group = context.parameters.uuid("gid")!
            let members = try await inGroup(context, group) { _, connection in try GroupStore().members(of: group, on: connection) }
            return try APIJSON.response(.ok, Page(items: members.map {
                MemberView(userID: $0.userID, displayName: $0.displayName, role: $0.role, joinedAt: $0.joinedAt)
            }, next: nil))
        }
        builder.add(.patch, "/v1/groups/{gid:uuid}", bodyLimit: 16 * 1024) { context in
            let group = context.parameters.uuid("gid")!
            let body = try context.decodeJSON(PatchGroupBody.self)
            let name = try body.name.map { value throws(APIError) in try ProfileRoutes.text(value, field: "name", range: 1...200) }
            let description = try body.description.map { value throws(APIError) in
                try ProfileRoutes.text(value, field: "description", range: 0...2000, allowNewlines: true)
            }
            let updated = try await inGroup(context, group) { caller, connection in
                guard caller.isManager else { throw Self.forbidden("only the owner and admins can change the group") }
                try GroupStore().update(group: group, name: name, description: description, on: connection)
                let data = try String(decoding: APIJSON.encode(["name": name, "description": description]), as: UTF8.self)
                try GroupEventLog().append(tenant: caller.user.tenantID, group: group, event: .groupUpdated, actorType: "user",
                                               actorID: caller.user.id, data: RawJSON(data), on: connection)
                return (try GroupStore().group(id: group, on: connection)!, caller.role)
            }
            return try APIJSON.response(.ok, GroupRoutes.GroupView(updated.0, role: updated.1))
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}") { context in
            let group = context.parameters.uuid("gid")!
            try await inGroup(context, group) { caller, connection in
                guard caller.role == "owner" else { throw Self.forbidden("only the owner can delete the group") }
                try GroupStore().delete(group: group, on: connection)
            }
            return HTTPResponse(status: .noContent)
        }
        builder.add(.patch, "/v1/groups/{gid:uuid}/members/{uid:uuid}", bodyLimit: 4 * 1024) { context in
            let group = context.parameters.uuid("gid")!
            let target = context.parameters.uuid("uid")!
            let body = try context.decodeJSON(RoleBody.self)
            guard body.role == "admin" || body.role == "member" else {
                throw APIError.invalid("role must be admin or member (ownership moves with POST .../owner)", "role")
            }
            let member = try await inGroup(context, group) { caller, connection in
                guard caller.role == "owner" else { throw Self.forbidden("only the owner can change roles") }
                guard let current = try GroupStore().role(of: target, in: group, on: connection) else {
                    throw APIError(.notFound, code: "not_found", message: "no such member")
                }
                guard current != "owner" else {
                    throw APIError(.conflict, code: "conflict", message: "the owner's role changes only by transferring ownership")
                }
                if current != body.role {
                    try GroupStore().setRole(body.role, of: target, in: group, on: connection)
                    try appendRoleChange(caller, group: group, user: target, from: current, to: body.role, on: connection)
                }
                return try GroupStore().members(of: group, on: connection).first { $0.userID == target }!
            }
            return try APIJSON.response(.ok, MemberView(userID: member.userID, displayName: member.displayName, role: member.role, joinedAt: member.joinedAt))
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}/members/{uid:uuid}") { context in
            let group = context.parameters.uuid("gid")!
            let target = context.parameters.uuid("uid")!
            try await inGroup(context, group) { caller, connection in
                let leaving = target == caller.user.id
                guard let current = try GroupStore().role(of: target, in: group, on: connection) else {
                    throw APIError(.notFound, code: "not_found", message: "no such member")
                }
                if current == "owner" {
                    throw leaving
                        ? APIError(.conflict, code: "conflict", message: "the owner cannot leave: transfer ownership or delete the group")
                        : Self.forbidden("the owner cannot be removed")
                }
                guard leaving || caller.isManager else { throw Self.forbidden("only the owner and admins can remove members") }
                try GroupStore().removeMember(target, from: group, on: connection)
                let data = #"{"user_id":"\#(target.uuidString.lowercased())"}"#
                try GroupEventLog().append(tenant: caller.user.tenantID, group: group, event: leaving ? .memberLeft : .memberRemoved,
                                               actorType: "user", actorID: caller.user.id, data: RawJSON(data), subject: target, on: connection)
            }
            return HTTPResponse(status: .noContent)
        }
        builder.add(.post, "/v1/groups/{gid:uuid}/owner", bodyLimit: 4 * 1024) { context in
            let group = context.parameters.uuid("gid")!
            let body = try context.decodeJSON(OwnerBody.self)
            try await inGroup(context, group) { caller, connection in
                guard caller.role == "owner" else { throw Self.forbidden("only the owner can transfer ownership") }
                guard let current = try GroupStore().role(of: body.userID, in: group, on: connection) else {
                    throw APIError.invalid("the new owner must be a member", "user_id")
                }
                guard current != "owner" else { return }
                // Demote first: at most one owner at any moment (memberships_one_owner_key).
                try GroupStore().setRole("admin", of: caller.user.id, in: group, on: connection)
                try GroupStore().setRole("owner", of: body.userID, in: group, on: connection)
                try appendRoleChange(caller, group: group, user: caller.user.id, from: "owner", to: "admin", on: connection)
                try appendRoleChange(caller, group: group, user: body.userID, from: current, to: "owner", on: connection)
            }
            return try await groupResponse(context, group)
        }
    }

    private func appendRoleChange(_ caller: GroupCaller, group: UUID, user: UUID, from: String, to: String, on connection: PostgresConnection) throws {
        let data = #"{"user_id":"\#(user.uuidString.lowercased())","from":"\#(from)","to":"\#(to)"}"#
        try GroupEventLog().append(tenant: caller.user.tenantID, group: group, event: .memberRoleChanged, actorType: "user",
                                       actorID: caller.user.id, data: RawJSON(data), on: connection)
    }

    private func groupResponse(_ context: RequestContext, _ group: UUID) async throws -> HTTPResponse {
        let (found, role) = try await inGroup(context, group) { caller, connection in (try GroupStore().group(id: group, on: connection)!, caller.role) }
        return try APIJSON.response(.ok, GroupRoutes.GroupView(found, role: role))
    }

    @discardableResult
    private func inGroup<Value: Sendable>(
        _ context: RequestContext, _ group: UUID, _ body: @escaping @Sendable (GroupCaller, PostgresConnection) throws -> Value
    ) async throws -> Value {
        try await accounts.inGroup(context, group, body)
    }
}
