import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Invitations": inviting by email or phone, listing, revoking; the addressee's list,
/// accepting (by token or by id) and declining. The token leaves only through the outbox, to the
/// invited address; it is never in a response or a log line.
struct InvitationRoutes: Sendable {
    let accounts: AccountRoutes
    let lifetime: Int

    struct CreateBody: Decodable, KnownFields {
        let email: String?
        let phone: String?
        let role: String?
        static let fieldNames: Set<String> = ["email", "phone", "role"]
    }

    struct AcceptBody: Decodable, KnownFields {
        let token: String?
        let invitationID: UUID?
        enum CodingKeys: String, CodingKey { case token, invitationID = "invitation_id" }
        static let fieldNames: Set<String> = ["token", "invitation_id"]
    }

    /// An invitation as its addressee sees it in `GET /v1/invitations`.
    struct AddressedView: Encodable {
        let invitation: Invitation
        let groupName: String

        func encode(to encoder: any Encoder) throws {
            try InvitationView(invitation: invitation).encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(invitation.groupID.uuidString.lowercased(), forKey: .groupID)
            try container.encode(groupName, forKey: .groupName)
        }

        enum CodingKeys: String, CodingKey {
            case groupID = "group_id"
            case groupName = "group_name"
        }
    }

    /// An addressee who already has an account with that address verified hears of the
    /// invitation at once: an `invitation.received` notice on their streams, carrying the item
    /// `GET /v1/invitations` lists (sent only if the transaction commits).
    static func announce(_ invitation: Invitation, groupName: String, tenant: UUID, on connection: PostgresConnection) throws {
        guard let addressee = try UserStore().find(email: invitation.email, phone: invitation.phone, on: connection),
              invitation.email != nil ? addressee.emailVerified : addressee.phoneVerified
        else { return }
        let data = String(decoding: try APIJSON.encode(AddressedView(invitation: invitation, groupName: groupName)), as: UTF8.self)
        try GroupEventLog.notifyUser(tenant: tenant, user: addressee.id, event: .invitationReceived, data: data, on: connection)
    }

    struct InvitationView: Encodable {
        let invitation: Invitation

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(invitation.id.uuidString.lowercased(), forKey: .id)
            try container.encode(invitation.email, forKey: .email)
            try container.encode(invitation.phone, forKey: .phone)
            try container.encode(invitation.role, forKey: .role)
            try container.encode(invitation.status, forKey: .status)
            try container.encode(invitation.expiresAt, forKey: .expiresAt)
        }

        enum CodingKeys: String, CodingKey {
            case id, email, phone, role, status
            case expiresAt = "expires_at"
        }
    }

    struct AcceptedView: Encodable {
        let group: GroupRoutes.GroupView
        let role: String
    }

    func add(to builder: inout Router.Builder) {
        let pool = accounts.pool
        let lifetime = self.lifetime
        builder.add(.post, "/v1/groups/{gid:uuid}/invitations", bodyLimit: 4 * 1024) { context in
            let group = context.parameters.uuid("gid")!
            let body = try context.decodeJSON(CreateBody.self)
            guard (body.email == nil) != (body.phone == nil) else {
                throw APIError.invalid("give exactly one of email and phone", "email")
            }
            let (email, phone) = try AccountRoutes.identifiers(email: body.email, phone: body.phone)
            let role = body.role ?? "member"
            guard role == "member" || role == "admin" else {
                throw APIError.invalid("role must be member or admin", "role")
            }
            do {
                let invitation = try await accounts.inGroup(context, group) { caller, connection in
                        try caller.requireManager("only the owner and admins can invite")
                        if role == "admin" && caller.role != "owner" {
                            throw APIError(.forbidden, code: "forbidden", message: "only the owner can make an admin", field: "role")
                        }
                        let user = caller.user
                        let tenant = user.tenantID.uuidString
                        if let phone { try Throttle.requireSMSAllowed(phone, tenant: user.tenantID, field: "phone", on: connection) }
                        let limits = accounts.limits
                        try Throttle.count([
                            RateLimit("invite-sender:\(tenant):\(user.id.uuidString)", limit: limits.invitationsPerSenderPerDay, window: Throttle.day),
                            RateLimit("invite-recipient:\(tenant):\(email ?? phone!)", limit: limits.invitationsPerRecipientPerDay, window: Throttle.day),
                            RateLimit("invite-group:\(tenant):\(group.uuidString)", limit: limits.invitationsPerGroupPerDay, window: Throttle.day),
                        ], "too many invitations today; try again tomorrow", on: connection)
                        let (text, token) = TenantToken.generate(TenantToken.invitation, tenant: user.tenantID)
                        if try InvitationStore().isMember(email: email, phone: phone, group: group, on: connection) {
                            throw APIError(.conflict, code: "conflict", message: "that person is already a member")
                        }
                        let invitation = try InvitationStore().create(
                            tenant: user.tenantID, group: group, email: email, phone: phone, role: role, tokenHash: token.hash,
                            invitedBy: user.id, lifetime: lifetime, on: connection)
                        let groupName = try GroupStore().group(id: group, on: connection)?.name ?? ""
                        let data = "{\"token\":\(JSONString.quote(text)),\"group_name\":\(JSONString.quote(groupName)),"
                            + "\"inviter\":\(JSONString.quote(user.displayName)),\"inviter_id\":\"\(user.id.uuidString.lowercased())\",\"invitation_id\":\"\(invitation.id.uuidString.lowercased())\"}"
                        try OutboxStore().enqueue(tenant: user.tenantID, channel: email != nil ? "email" : "sms",
                                                  recipient: email ?? phone!, template: "invitation", data: RawJSON(data), on: connection)
                        try Self.announce(invitation, groupName: groupName, tenant: user.tenantID, on: connection)
                        return invitation
                }
                return try APIJSON.response(.created, InvitationView(invitation: invitation))
            } catch let error as DatabaseError where error.code == .uniqueViolation {
                throw APIError(.conflict, code: "conflict", message: "a pending invitation to that address exists")
            }
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/invitations") { context in
            let group = context.parameters.uuid("gid")!
            let invitations = try await accounts.inGroup(context, group) { caller, connection in
                try caller.requireManager("only the owner and admins see invitations")
                return try InvitationStore().list(group: group, on: connection)
            }
            return try APIJSON.response(.ok, Page(items: invitations.map(InvitationView.init), next: nil))
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}/invitations/{iid:uuid}") { context in
            let group = context.parameters.uuid("gid")!
            let id = context.parameters.uuid("iid")!
            try await accounts.inGroup(context, group) { caller, connection in
                try caller.requireManager("only the owner and admins revoke invitations")
                guard try InvitationStore().revoke(id, group: group, on: connection) else {
                    throw APIError(.notFound, code: "not_found", message: "no such pending invitation")
                }
            }
            return HTTPResponse(status: .noContent)
        }
        builder.add(.get, "/v1/invitations") { context in
            let user = try await accounts.authenticate(context)
            let addressed = try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { connection in
                    try InvitationStore().addressed(email: user.emailVerified ? user.email : nil,
                                                    phone: user.phoneVerified ? user.phone : nil, on: connection)
                }
            }
            return try APIJSON.response(.ok, Page(items: addressed.map { AddressedView(invitation: $0.0, groupName: $0.groupName) }, next: nil))
        }
        builder.add(.post, "/v1/invitations/accept", bodyLimit: 4 * 1024) { context in
            let user = try await accounts.authenticate(context)
            let body = try context.decodeJSON(AcceptBody.self)
            guard (body.token == nil) != (body.invitationID == nil) else {
                throw APIError.invalid("give exactly one of token and invitation_id", "token")
            }
            // A token of another tenant (or of no tenant at all) names nothing here.
            let tokenHash = try body.token.map { text throws(APIError) in
                guard let token = TenantToken(text, prefix: TenantToken.invitation), token.tenant == user.tenantID else { throw Self.notFound }
                return token.hash
            }
            let (group, role) = try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { connection -> (WatchGroup, String) in
                    let invitation: Invitation
                    if let tokenHash {
                        guard let found = try InvitationStore().find(tokenHash: tokenHash, on: connection) else { throw Self.notFound }
                        invitation = found
                    } else {
                        invitation = try Self.addressedTo(user, id: body.invitationID!, on: connection)
                    }
                    try Self.requireOpen(invitation)
                    if try GroupStore().role(of: user.id, in: invitation.groupID, on: connection) != nil {
                        throw APIError(.conflict, code: "conflict", message: "you are already a member of this group")
                    }
                    try Self.join(invitation, user: user, on: connection)
                    return (try GroupStore().group(id: invitation.groupID, on: connection)!, invitation.role)
                }
            }
            return try APIJSON.response(.ok, AcceptedView(group: GroupRoutes.GroupView(group, role: role), role: role))
        }
        builder.add(.post, "/v1/invitations/{iid:uuid}/decline") { context in
            let user = try await accounts.authenticate(context)
            let id = context.parameters.uuid("iid")!
            try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { connection in
                    let invitation = try Self.addressedTo(user, id: id, on: connection)
                    try Self.requireOpen(invitation)
                    try InvitationStore().markDeclined(invitation.id, on: connection)
                }
            }
            return HTTPResponse(status: .noContent)
        }
    }

    static let notFound = APIError(.notFound, code: "not_found", message: "no such invitation")

    /// The invitation with this id if it is addressed to one of the user's verified addresses;
    /// otherwise 404, whether or not it exists.
    static func addressedTo(_ user: User, id: UUID, on connection: PostgresConnection) throws -> Invitation {
        guard let invitation = try InvitationStore().find(id: id, on: connection),
              (invitation.email != nil && user.emailVerified && invitation.email == user.email)
                || (invitation.phone != nil && user.phoneVerified && invitation.phone == user.phone) else { throw notFound }
        return invitation
    }

    /// 410 unless the invitation can still be answered.
    static func requireOpen(_ invitation: Invitation) throws(APIError) {
        guard invitation.status == "pending" else {
            let message = invitation.status == "expired" ? "the invitation has expired" : "the invitation was \(invitation.status)"
            throw APIError(.gone, code: "expired", message: message)
        }
    }

    /// Makes the user a member as the invitation says, in the caller's transaction: the
    /// membership, the invitation's answer, the `member.joined` event, and (holding the token or
    /// the verified address proves it) the address marked verified when it is the user's own.
    static func join(_ invitation: Invitation, user: User, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO memberships (tenant_id, group_id, user_id, role)
            VALUES (\(user.tenantID), \(invitation.groupID), \(user.id), \(invitation.role))
            """)
        try InvitationStore().markAccepted(invitation.id, by: user.id, on: connection)
        if let email = invitation.email {
            try UserStore().markVerified(user: user.id, channel: "email", address: email, on: connection)
        }
        if let phone = invitation.phone {
            try UserStore().markVerified(user: user.id, channel: "phone", address: phone, on: connection)
        }
        let data = #"{"user_id":"\#(user.id.uuidString.lowercased())","role":"\#(invitation.role)"}"#
        try GroupEventLog().append(tenant: user.tenantID, group: invitation.groupID, event: .memberJoined,
                                   actorType: "user", actorID: user.id, data: RawJSON(data), subject: user.id, on: connection)
    }
}
