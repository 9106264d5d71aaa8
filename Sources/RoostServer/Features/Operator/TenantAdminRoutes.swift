import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Moderation and tenant administration", the operator's half: one tenant's accounts
/// (list, show, suspend, erase), its coordinators, its groups (list, hand over, delete) and the
/// tenant itself (deleted only when the request names it twice). Behind `ROOST_ADMIN_TOKEN`,
/// as `TenantRoutes`; each change to a group is in the group's audit with the actor `operator`.
enum TenantAdminRoutes {
    struct UserPatch: Decodable, KnownFields {
        let suspended: Bool?
        static let fieldNames: Set<String> = ["suspended"]
    }

    struct InvitationBody: Decodable, KnownFields {
        let email: String?
        let phone: String?
        let role: String?
        static let fieldNames: Set<String> = ["email", "phone", "role"]
    }

    struct OwnerBody: Decodable, KnownFields {
        let userID: UUID
        enum CodingKeys: String, CodingKey { case userID = "user_id" }
        static let fieldNames: Set<String> = ["user_id"]
    }

    struct UserView: Encodable {
        @LowercaseID var id: UUID
        let displayName: String
        @Null var email: String?
        @Null var phone: String?
        let createdAt: Date
        let suspended: Bool
        let coordinator: Bool
        /// With `show`: the groups and roles.
        let groups: [Membership]?

        struct Membership: Encodable {
            @LowercaseID var groupID: UUID
            let role: String
            enum CodingKeys: String, CodingKey {
                case role
                case groupID = "group_id"
            }
        }

        init(_ user: AdminUser, groups: [Membership]? = nil) {
            id = user.id
            displayName = user.displayName
            email = user.email
            phone = user.phone
            createdAt = user.createdAt
            suspended = user.suspended
            coordinator = user.coordinator
            self.groups = groups
        }

        enum CodingKeys: String, CodingKey {
            case id, email, phone, suspended, coordinator, groups
            case displayName = "display_name"
            case createdAt = "created_at"
        }
    }

    struct AdminGroupView: Encodable {
        @LowercaseID var id: UUID
        let name: String
        let createdAt: Date
        let members: Int
        @Null var owner: Owner?

        struct Owner: Encodable {
            @LowercaseID var id: UUID
            let displayName: String
            enum CodingKeys: String, CodingKey {
                case id
                case displayName = "display_name"
            }
        }

        init(_ group: AdminGroup) {
            id = group.id
            name = group.name
            createdAt = group.createdAt
            members = group.members
            owner = group.ownerID.map { Owner(id: $0, displayName: group.ownerName ?? "") }
        }

        enum CodingKeys: String, CodingKey {
            case id, name, members, owner
            case createdAt = "created_at"
        }
    }

    static let noSuchTenant = APIError(.notFound, code: .notFound, message: "no such tenant")
    static let noSuchUser = APIError(.notFound, code: .notFound, message: "no such user in this tenant")

    /// `invitationLifetime`: how long an invitation to register stays good (`ROOST_INVITATION_TTL_S`);
    /// `limits`: the tenant's budget for messages outside the app, which its invitations use.
    static func add(to builder: inout Router.Builder, pool: ConnectionPool, adminToken: String?, invitationLifetime: Int = 7 * 86_400,
                    limits: AbuseLimits = AbuseLimits()) {
        /// `body` in one transaction of the tenant the path names, after the operator's token is checked.
        @Sendable func inTenant<Value: Sendable>(_ context: RequestContext, _ body: @escaping @Sendable (Tenant, PostgresConnection) throws -> Value)
            async throws -> Value
        {
            try TenantRoutes.authorize(context, adminToken: adminToken)
            let slug = context.parameters["slug"] ?? ""
            guard TenantSlug(slug) != nil else { throw noSuchTenant }
            return try await pool.withConnection { connection in
                guard let tenant = try TenantStore().find(slug: slug, on: connection) else { throw noSuchTenant }
                return try connection.withTenantTransaction(tenant.id) { try body(tenant, $0) }
            }
        }

        builder.add(.get, "/v1/admin/tenants/{slug}/users") { context in
            let limit = try context.limit()
            let after = try context.cursorID()
            let users = try await inTenant(context) { _, connection in try TenantAdminStore().users(after: after, limit: limit, on: connection) }
            return try APIJSON.response(.ok, Page(items: users.map { UserView($0) }, next: users.count == limit ? users.last?.id.lowercasedText : nil))
        }
        builder.add(.get, "/v1/admin/tenants/{slug}/users/{uid:uuid}") { context in
            let id = context.parameters.uuid("uid")!
            let view = try await inTenant(context) { _, connection -> UserView in
                guard let user = try TenantAdminStore().user(id, on: connection) else { throw noSuchUser }
                let groups = try GroupStore().memberships(of: id, on: connection).map { UserView.Membership(groupID: $0.group, role: $0.role) }
                return UserView(user, groups: groups)
            }
            return try APIJSON.response(.ok, view)
        }
        builder.add(.patch, "/v1/admin/tenants/{slug}/users/{uid:uuid}", bodyLimit: 4 * 1024) { context in
            let body = try context.decodeJSON(UserPatch.self)
            let id = context.parameters.uuid("uid")!
            let view = try await inTenant(context) { tenant, connection -> UserView in
                let store = TenantAdminStore()
                if let suspended = body.suspended {
                    guard try store.setSuspended(suspended, user: id, on: connection) else { throw noSuchUser }
                    // Every session ends, and the streams they hold close with 1008.
                    if suspended { try UserStore().deleteSessions(of: id, tenant: tenant.id, on: connection) }
                }
                guard let user = try store.user(id, on: connection) else { throw noSuchUser }
                return UserView(user)
            }
            return try APIJSON.response(.ok, view)
        }
        builder.add(.delete, "/v1/admin/tenants/{slug}/users/{uid:uuid}") { context in
            let id = context.parameters.uuid("uid")!
            try await inTenant(context) { _, connection in
                guard let user = try UserStore().find(id: id, on: connection) else { throw noSuchUser }
                try AccountDeletion.run(user, on: connection)
            }
            return HTTPResponse(status: .noContent)
        }
        builder.add(.put, "/v1/admin/tenants/{slug}/coordinators/{uid:uuid}") { context in
            let id = context.parameters.uuid("uid")!
            let view = try await inTenant(context) { _, connection -> UserView in
                guard try TenantAdminStore().setCoordinator(true, user: id, on: connection), let user = try TenantAdminStore().user(id, on: connection) else {
                    throw noSuchUser
                }
                return UserView(user)
            }
            return try APIJSON.response(.ok, view)
        }
        builder.add(.delete, "/v1/admin/tenants/{slug}/coordinators/{uid:uuid}") { context in
            let id = context.parameters.uuid("uid")!
            try await inTenant(context) { tenant, connection in
                guard try TenantAdminStore().setCoordinator(false, user: id, on: connection) else { throw noSuchUser }
                // Their streams follow every group: they end (1008), and so do the sessions, so
                // nothing keeps following what is no longer theirs.
                try UserStore().deleteSessions(of: id, tenant: tenant.id, on: connection)
            }
            return HTTPResponse(status: .noContent)
        }
        builder.add(.get, "/v1/admin/tenants/{slug}/groups") { context in
            let limit = try context.limit()
            let after = try context.cursor(\.byName)
            let groups = try await inTenant(context) { _, connection in try TenantAdminStore().groups(after: after, limit: limit, on: connection) }
            let next = groups.count == limit ? groups.last.map { ListCursor.write(name: $0.name, id: $0.id) } : nil
            return try APIJSON.response(.ok, Page(items: groups.map(AdminGroupView.init), next: next))
        }
        builder.add(.post, "/v1/admin/tenants/{slug}/groups/{gid:uuid}/owner", bodyLimit: 4 * 1024) { context in
            let body = try context.decodeJSON(OwnerBody.self)
            let group = context.parameters.uuid("gid")!
            let view = try await inTenant(context) { tenant, connection -> AdminGroupView in
                try handOver(group, to: body.userID, tenant: tenant.id, on: connection)
                guard let found = try TenantAdminStore().group(group, on: connection) else { throw APIError.noSuchGroup }
                return AdminGroupView(found)
            }
            return try APIJSON.response(.ok, view)
        }
        builder.add(.delete, "/v1/admin/tenants/{slug}/groups/{gid:uuid}") { context in
            let group = context.parameters.uuid("gid")!
            try await inTenant(context) { tenant, connection in
                guard let found = try GroupStore().group(id: group, on: connection) else { throw APIError.noSuchGroup }
                try GroupStore().delete(group: group, on: connection)
                try AuditLog().record(tenant: tenant.id, group: group, actor: .operator, action: .groupDeleted, target: ("group", group.lowercasedText),
                                      data: "{\"name\":\(JSONString.quote(found.name))}", on: connection)
            }
            return HTTPResponse(status: .noContent)
        }
        builder.add(.post, "/v1/admin/tenants/{slug}/invitations", bodyLimit: 4 * 1024) { context in
            let body = try context.decodeJSON(InvitationBody.self)
            guard (body.email == nil) != (body.phone == nil) else { throw APIError.invalid("give exactly one of email and phone", "email") }
            let (email, phone) = try ContactAddresses.validate(email: body.email, phone: body.phone)
            let role = body.role ?? "member"
            guard ["coordinator", "member"].contains(role) else { throw APIError.invalid("role must be coordinator or member", "role") }
            let created = try await inTenant(context) { tenant, connection -> String in
                let address = email ?? phone!
                if try UserStore().find(email: email, phone: phone, on: connection) != nil {
                    throw APIError(.conflict, code: .conflict, message: "an account with that address exists here already",
                                   field: email != nil ? "email" : "phone")
                }
                if let phone { try Throttle.requireSMSAllowed(phone, tenant: tenant.id, field: "phone", on: connection) }
                try OutsideBudget.require(email != nil ? .email : .sms, to: address, tenant: tenant.id, by: nil, limits: limits, on: connection)
                let (text, token) = TenantToken.generate(TenantToken.invitation, tenant: tenant.id)
                let (id, expires) = try TenantAdminStore().createInvitation(tenant: tenant.id, email: email, phone: phone, role: role,
                                                                            tokenHash: token.hash, lifetime: invitationLifetime, on: connection)
                let data = "{\"token\":\(JSONString.quote(text)),\"tenant\":\(JSONString.quote(tenant.slug)),\"role\":\"\(role)\","
                    + "\"coordinator\":\(role == "coordinator"),\"to\":\(JSONString.quote(address))}"
                try OutboxStore().enqueue(tenant: tenant.id, email: email, phone: phone, template: .tenantInvitation, data: RawJSON(data), on: connection)
                return "{\"id\":\"\(id.lowercasedText)\",\"role\":\"\(role)\",\"expires_at\":\(JSONString.quote(APIJSON.time(expires)))}"
            }
            return .json(.created, Array(created.utf8))
        }
        builder.add(.delete, "/v1/admin/tenants/{slug}") { context in
            let slug = context.parameters["slug"] ?? ""
            guard context.request.target.queryValue("confirm") == slug else {
                try TenantRoutes.authorize(context, adminToken: adminToken)
                throw APIError.invalid("deleting a tenant deletes everything in it: export what you keep, then send ?confirm=<slug>", "confirm")
            }
            try await inTenant(context) { tenant, connection in try TenantAdminStore().deleteTenant(tenant.id, on: connection) }
            return HTTPResponse(status: .noContent)
        }
    }

    /// The operator hands a group to one of its members (its owner becomes an admin), as when an
    /// owner has gone quiet; events and audit say the operator did it.
    static func handOver(_ group: UUID, to newOwner: UUID, tenant: UUID, on connection: PostgresConnection) throws {
        let groups = GroupStore()
        guard try groups.group(id: group, on: connection) != nil else { throw APIError.noSuchGroup }
        let owner = try TenantAdminStore().owner(of: group, on: connection)
        guard let current = try groups.role(of: newOwner, in: group, on: connection) else {
            throw APIError.invalid("the new owner must be a member of the group", "user_id")
        }
        guard current != .owner else { return }
        var changes: [(UUID, Role, Role)] = []
        if let owner {
            try groups.setRole(.admin, of: owner, in: group, on: connection)
            changes.append((owner, .owner, .admin))
        }
        try groups.setRole(.owner, of: newOwner, in: group, on: connection)
        changes.append((newOwner, current, .owner))
        for (user, from, to) in changes {
            let data = #"{"user_id":"\#(user.lowercasedText)","from":"\#(from.name)","to":"\#(to.name)","reason":"operator"}"#
            try GroupEventLog().append(tenant: tenant, group: group, event: .memberRoleChanged, actorType: .system, actorID: nil,
                                       data: RawJSON(data), on: connection)
            try AuditLog().record(tenant: tenant, group: group, actor: .operator, action: .memberRoleChanged, target: ("user", user.lowercasedText),
                                  data: #"{"from":"\#(from.name)","to":"\#(to.name)"}"#, on: connection)
        }
    }
}
