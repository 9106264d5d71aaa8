import Foundation
import RoostPersistence
import RoostProtocol

/// API.md "Invitations" (first part): inviting by email or phone, listing, revoking, and
/// accepting by token. The token leaves only through the outbox, to the invited address; it is
/// never in a response or a log line.
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
        let token: String
        static let fieldNames: Set<String> = ["token"]
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
                throw APIError(.badRequest, code: "validation_failed", message: "give exactly one of email and phone", field: "email")
            }
            let (email, phone) = try AccountRoutes.identifiers(email: body.email, phone: body.phone)
            let role = body.role ?? "member"
            guard role == "member" || role == "admin" else {
                throw APIError(.badRequest, code: "validation_failed", message: "role must be member or admin", field: "role")
            }
            do {
                let invitation = try await accounts.inGroup(context, group) { caller, connection in
                        try caller.requireManager("only the owner and admins can invite")
                        let user = caller.user
                        let (text, token) = TenantToken.generate(TenantToken.invitation, tenant: user.tenantID)
                        if try InvitationStore().isMember(email: email, phone: phone, group: group, on: connection) {
                            throw APIError(.conflict, code: "conflict", message: "that person is already a member")
                        }
                        let invitation = try InvitationStore().create(
                            tenant: user.tenantID, group: group, email: email, phone: phone, role: role, tokenHash: token.hash,
                            invitedBy: user.id, lifetime: lifetime, on: connection)
                        let groupName = try GroupStore().group(id: group, on: connection)?.name ?? ""
                        let data = "{\"token\":\(JSONString.quote(text)),\"group_name\":\(JSONString.quote(groupName)),"
                            + "\"inviter\":\(JSONString.quote(user.displayName)),\"invitation_id\":\"\(invitation.id.uuidString.lowercased())\"}"
                        try OutboxStore().enqueue(tenant: user.tenantID, channel: email != nil ? "email" : "sms",
                                                  recipient: email ?? phone!, template: "invitation", data: RawJSON(data), on: connection)
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
        builder.add(.post, "/v1/invitations/accept", bodyLimit: 4 * 1024) { context in
            let user = try await accounts.authenticate(context)
            let body = try context.decodeJSON(AcceptBody.self)
            // A token of another tenant (or none at all) names nothing here.
            let notFound = APIError(.notFound, code: "not_found", message: "no such invitation")
            guard let token = TenantToken(body.token, prefix: TenantToken.invitation), token.tenant == user.tenantID else { throw notFound }
            let (group, role) = try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { connection -> (WatchGroup, String) in
                    guard let invitation = try InvitationStore().find(tokenHash: token.hash, on: connection) else { throw notFound }
                    if invitation.status == "pending" && invitation.expiresAt <= Date() {
                        try InvitationStore().markExpired(invitation.id, on: connection)
                        throw APIError(.gone, code: "expired", message: "the invitation has expired")
                    }
                    guard invitation.status == "pending" else {
                        throw APIError(.gone, code: "expired", message: "the invitation was \(invitation.status)")
                    }
                    if try GroupStore().role(of: user.id, in: invitation.groupID, on: connection) != nil {
                        throw APIError(.conflict, code: "conflict", message: "you are already a member of this group")
                    }
                    try connection.query("""
                        INSERT INTO memberships (tenant_id, group_id, user_id, role)
                        VALUES (\(user.tenantID), \(invitation.groupID), \(user.id), \(invitation.role))
                        """)
                    try InvitationStore().markAccepted(invitation.id, by: user.id, on: connection)
                    // Holding the token proves the address: verify it when it is the user's own.
                    if let email = invitation.email, email == user.email {
                        try connection.query("UPDATE users SET email_verified = true WHERE id = \(user.id)")
                    }
                    if let phone = invitation.phone, phone == user.phone {
                        try connection.query("UPDATE users SET phone_verified = true WHERE id = \(user.id)")
                    }
                    let data = #"{"user_id":"\#(user.id.uuidString.lowercased())","role":"\#(invitation.role)"}"#
                    _ = try GroupEventLog().append(tenant: user.tenantID, group: invitation.groupID, event: "member.joined",
                                                   actorType: "user", actorID: user.id, data: RawJSON(data), on: connection)
                    return (try GroupStore().group(id: invitation.groupID, on: connection)!, invitation.role)
                }
            }
            return try APIJSON.response(.ok, AcceptedView(
                group: GroupRoutes.GroupView(group, role: role), role: role))
        }
    }
}
