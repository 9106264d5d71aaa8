import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Groups and members": creating, listing, reading, editing and deleting groups. A group
/// the caller is not in is answered exactly like one that does not exist (404).
struct GroupRoutes: Sendable {
    let auth: Authentication
    let limits: AbuseLimits

    struct CreateBody: Decodable, KnownFields {
        let name: String
        let description: String?
        static let fieldNames: Set<String> = ["name", "description"]
    }

    struct PatchBody: Decodable, KnownFields {
        let name: String?
        let description: String?
        static let fieldNames: Set<String> = ["name", "description"]
    }

    struct SummaryView: Encodable {
        @LowercaseID var id: UUID
        let name: String
        let role: String
        let lastSeq: Int64
        let openAlerts: Int

        enum CodingKeys: String, CodingKey {
            case id, name, role
            case lastSeq = "last_seq"
            case openAlerts = "open_alerts"
        }
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.post, "/v1/groups", bodyLimit: 16 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(CreateBody.self)
            let group = try await caller.run(CreateGroup(name: body.name, description: body.description, perDay: limits.groupsPerUserPerDay))
            return try APIJSON.response(.created, GroupView(group, role: .owner))
        }
        builder.add(.get, "/v1/groups", signedIn: auth) { _, caller in
            let groups = try await caller.inTenant { user, connection in try GroupStore().groups(of: user.id, on: connection) }
            let items = groups.map { SummaryView(id: $0.id, name: $0.name, role: $0.role, lastSeq: $0.lastSeq, openAlerts: $0.openAlerts) }
            return try APIJSON.response(.ok, Page(items: items, next: nil))
        }
        builder.add(.get, "/v1/groups/{gid:uuid}", signedIn: auth) { context, caller in
            let id = context.parameters.uuid("gid")!
            let (group, role) = try await caller.inGroup(id) { caller, connection in (try GroupStore().group(id: id, on: connection)!, caller.role) }
            return try APIJSON.response(.ok, GroupView(group, role: role))
        }
        builder.add(.patch, "/v1/groups/{gid:uuid}", bodyLimit: 16 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(PatchBody.self)
            let (group, role) = try await caller.run(UpdateGroup(group: context.parameters.uuid("gid")!, name: body.name, description: body.description))
            return try APIJSON.response(.ok, GroupView(group, role: role))
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}", signedIn: auth) { context, caller in
            try await caller.run(DeleteGroup(group: context.parameters.uuid("gid")!))
            return HTTPResponse(status: .noContent)
        }
    }
}

/// A group as the caller sees it, with their role in it (API.md "Groups and members").
struct GroupView: Encodable {
    @LowercaseID var id: UUID
    let name: String
    let description: String
    let role: String
    let lastSeq: Int64
    let createdAt: Date

    enum CodingKeys: String, CodingKey {
        case id, name, description, role
        case lastSeq = "last_seq"
        case createdAt = "created_at"
    }

    init(_ group: WatchGroup, role: Role) {
        id = group.id
        name = group.name
        description = group.description
        self.role = role.name
        lastSeq = group.lastSeq
        createdAt = group.createdAt
    }
}
