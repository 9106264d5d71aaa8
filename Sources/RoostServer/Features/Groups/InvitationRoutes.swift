import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Invitations": inviting by email or phone, listing, revoking; the addressee's list,
/// accepting (by token or by id) and declining. The token leaves only through the outbox, to the
/// invited address; it is never in a response or a log line.
struct InvitationRoutes: Sendable {
    let auth: Authentication
    let limits: AbuseLimits
    /// How long an invitation stays valid (`ROOST_INVITATION_TTL_S`).
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
            try container.encode(invitation.groupID.lowercasedText, forKey: .groupID)
            try container.encode(groupName, forKey: .groupName)
        }

        enum CodingKeys: String, CodingKey {
            case groupID = "group_id"
            case groupName = "group_name"
        }
    }

    struct InvitationView: Encodable {
        @LowercaseID var id: UUID
        @Null var email: String?
        @Null var phone: String?
        let role: String
        let status: String
        let expiresAt: Date

        init(invitation: Invitation) {
            (id, email, phone) = (invitation.id, invitation.email, invitation.phone)
            (role, status, expiresAt) = (invitation.role, invitation.status, invitation.expiresAt)
        }

        enum CodingKeys: String, CodingKey {
            case id, email, phone, role, status
            case expiresAt = "expires_at"
        }
    }

    struct AcceptedView: Encodable {
        let group: GroupView
        let role: String
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.post, "/v1/groups/{gid:uuid}/invitations", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(CreateBody.self)
            let invite = try InviteMember(group: context.parameters.uuid("gid")!, email: body.email, phone: body.phone, role: body.role,
                                          lifetime: lifetime, limits: limits)
            do {
                return try APIJSON.response(.created, InvitationView(invitation: try await caller.run(invite)))
            } catch let error as DatabaseError where error.code == .uniqueViolation {
                throw APIError(.conflict, code: .conflict, message: "a pending invitation to that address exists")
            }
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/invitations", signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let (limit, after) = (try context.limit(), try context.cursor(\.newestFirst))
            let invitations = try await caller.inGroup(group) { caller, connection in
                try caller.requireManager("only the owner and admins see invitations")
                return try InvitationStore().list(group: group, after: after, limit: limit, on: connection)
            }
            let next = invitations.count == limit ? invitations.last.map { ListCursor.write(NewestFirst($0.createdAt, $0.id)) } : nil
            return try APIJSON.response(.ok, Page(items: invitations.map(InvitationView.init), next: next))
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}/invitations/{iid:uuid}", signedIn: auth) { context, caller in
            try await caller.run(RevokeInvitation(group: context.parameters.uuid("gid")!, invitation: context.parameters.uuid("iid")!))
            return HTTPResponse(status: .noContent)
        }
        builder.add(.get, "/v1/invitations", signedIn: auth) { context, caller in
            let (limit, after) = (try context.limit(), try context.cursor(\.newestFirst))
            let addressed = try await caller.inTenant { user, connection in
                try InvitationStore().addressed(email: user.emailVerified ? user.email : nil, phone: user.phoneVerified ? user.phone : nil,
                                                after: after, limit: limit, on: connection)
            }
            let next = addressed.count == limit ? addressed.last.map { ListCursor.write(NewestFirst($0.0.createdAt, $0.0.id)) } : nil
            return try APIJSON.response(.ok, Page(items: addressed.map { AddressedView(invitation: $0.0, groupName: $0.groupName) }, next: next))
        }
        builder.add(.post, "/v1/invitations/accept", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(AcceptBody.self)
            guard (body.token == nil) != (body.invitationID == nil) else {
                throw APIError.invalid("give exactly one of token and invitation_id", "token")
            }
            let reference: RedeemInvitation.Reference
            if let text = body.token {
                // A token of another tenant (or of no tenant at all) names nothing here.
                guard let token = TenantToken(text, prefix: TenantToken.invitation), token.tenant == caller.token.tenant else {
                    throw APIError.noSuchInvitation
                }
                reference = .token(token.hash)
            } else {
                reference = .id(body.invitationID!)
            }
            let (group, role) = try await caller.run(RedeemInvitation(reference: reference))
            return try APIJSON.response(.ok, AcceptedView(group: GroupView(group, role: role), role: role.name))
        }
        builder.add(.post, "/v1/invitations/{iid:uuid}/decline", signedIn: auth) { context, caller in
            try await caller.run(DeclineInvitation(invitation: context.parameters.uuid("iid")!))
            return HTTPResponse(status: .noContent)
        }
    }
}
