import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Groups and members": creating, listing and reading groups. A group the caller is not
/// in is answered exactly like one that does not exist (404).
struct GroupRoutes: Sendable {
    let accounts: AccountRoutes

    struct CreateBody: Decodable, KnownFields {
        let name: String
        let description: String?
        static let fieldNames: Set<String> = ["name", "description"]
    }

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

        /// A group as the caller sees it, with their role in it.
        init(_ group: WatchGroup, role: String) {
            id = group.id
            name = group.name
            description = group.description
            self.role = role
            lastSeq = group.lastSeq
            createdAt = group.createdAt
        }
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
        let pool = accounts.pool
        builder.add(.post, "/v1/groups", bodyLimit: 16 * 1024) { context in
            let user = try await accounts.authenticate(context)
            let body = try context.decodeJSON(CreateBody.self)
            let name = try ProfileRoutes.text(body.name, field: "name", range: 1...200)
            let description = try body.description.map { value throws(APIError) in
                try ProfileRoutes.text(value, field: "description", range: 0...2000, allowNewlines: true)
            } ?? ""
            let limit = accounts.limits.groupsPerUserPerDay
            let group = try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { connection in
                    try Throttle.count([RateLimit("group-create:\(user.tenantID.uuidString):\(user.id.uuidString)", limit: limit, window: Throttle.day)],
                                       "too many groups created today; try again tomorrow", on: connection)
                    return try GroupStore().create(tenant: user.tenantID, owner: user.id, name: name, description: description, on: connection)
                }
            }
            return try APIJSON.response(.created, GroupView(group, role: "owner"))
        }
        builder.add(.get, "/v1/groups") { context in
            let user = try await accounts.authenticate(context)
            let groups = try await pool.withConnection { try $0.withTenantTransaction(user.tenantID) { try GroupStore().groups(of: user.id, on: $0) } }
            let items = groups.map { SummaryView(id: $0.id, name: $0.name, role: $0.role, lastSeq: $0.lastSeq, openAlerts: $0.openAlerts) }
            return try APIJSON.response(.ok, Page(items: items, next: nil))
        }
        builder.add(.get, "/v1/groups/{gid:uuid}") { context in
            let id = context.parameters.uuid("gid")!
            let (group, role) = try await accounts.inGroup(context, id) { caller, connection in
                (try GroupStore().group(id: id, on: connection)!, caller.role)
            }
            return try APIJSON.response(.ok, GroupView(group, role: role))
        }
    }
}
