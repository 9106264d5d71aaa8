import Foundation
import RoostPersistence
import RoostProtocol

/// Joining a group by an invitation, as accepting one (`RedeemInvitation`) and registering
/// with one both do.
enum InvitationJoin {
    /// 410 unless the invitation can still be answered.
    static func requireOpen(_ invitation: Invitation) throws(APIError) {
        guard invitation.status == "pending" else {
            let message = invitation.status == "expired" ? "the invitation has expired" : "the invitation was \(invitation.status)"
            throw APIError(.gone, code: .expired, message: message)
        }
    }

    /// Makes the user a member as the invitation says, in the caller's transaction (accepting,
    /// or registering with an invitation): the membership, the invitation's answer, the
    /// `member.joined` event, and (holding the token or the verified address proves it) the
    /// address marked verified when it is the user's own.
    static func join(_ invitation: Invitation, user: User, on connection: PostgresConnection) throws {
        if try ModerationStore().isBlocked(group: invitation.groupID, email: invitation.email, phone: invitation.phone, user: user.id, on: connection) {
            throw APIError.forbidden("you were blocked from this group")
        }
        try GroupStore().addMember(tenant: user.tenantID, group: invitation.groupID, user: user.id, role: Role(invitation.role), on: connection)
        try InvitationStore().markAccepted(invitation.id, by: user.id, on: connection)
        if let email = invitation.email {
            try UserStore().markVerified(user: user.id, channel: "email", address: email, on: connection)
        }
        if let phone = invitation.phone {
            try UserStore().markVerified(user: user.id, channel: "phone", address: phone, on: connection)
        }
        let data = #"{"user_id":"\#(user.id.lowercasedText)","role":"\#(invitation.role)"}"#
        try GroupEventLog().append(tenant: user.tenantID, group: invitation.groupID, event: .memberJoined,
                                   actorType: .user, actorID: user.id, data: RawJSON(data), subject: user.id, on: connection)
    }
}
