import Foundation
import RoostPersistence
import RoostProtocol

/// `roost outbox retry ID`: a failed delivery queued again with a fresh set of attempts. A
/// delivery's one-time secret (an invitation's token, a code) is deleted when it fails, so such
/// a delivery cannot go again as it was: an invitation still pending gets a fresh token (the old
/// one stops working), and any other is refused, naming how its person gets a new one.
enum DeliveryRetry {
    enum Outcome: Equatable, Sendable {
        case retried
        /// Retried with a new token for the invitation.
        case reissued
        /// Not retried: why, and what to do instead.
        case refused(String)
    }

    /// What sends a fresh secret, for each template that carries one.
    static let resend: [String: String] = [
        TemplateName.verification.name: "the person asks for a new code in the app (Me, then verify the address)",
        TemplateName.passwordReset.name: "the person asks for a new code on the sign-in screen (Forgot your password?)",
        TemplateName.escalationContactConfirm.name: "the group's organiser removes the escalation contact and adds it again",
        TemplateName.emergencyContactConfirm.name: "the person removes the emergency contact and adds it again (Me, then emergency contacts)",
        TemplateName.addressChanged.name: "the undo link cannot be sent again: the person resets their password from the sign-in screen",
    ]

    /// Retries the failed delivery `id` in the transaction's tenant; nil when there is none there.
    static func retry(_ id: UUID, tenant: UUID, on connection: PostgresConnection) throws -> Outcome? {
        let store = OutboxStore()
        guard let row = try store.failed(id, on: connection) else { return nil }
        let data = (try? JSONSerialization.jsonObject(with: Data(row.data.utf8)) as? [String: Any]) ?? [:]
        let hasSecret = data["token"] != nil || data["code"] != nil
        var outcome = Outcome.retried
        if row.template == TemplateName.invitation.name, !hasSecret {
            guard let text = data["invitation_id"] as? String, let invitation = UUID(uuidString: text) else {
                return .refused("this invitation's delivery does not name its invitation: invite the address again from the group")
            }
            let (fresh, token) = TenantToken.generate(TenantToken.invitation, tenant: tenant)
            guard try InvitationStore().reissue(invitation, tokenHash: token.hash, on: connection) else {
                return .refused("the invitation is no longer pending (accepted, revoked or expired): invite the address again from the group")
            }
            try store.setSecret(id, field: "token", value: fresh, on: connection)
            outcome = .reissued
        } else if let how = resend[row.template], !hasSecret {
            return .refused("its one-time code was deleted when it failed, so it cannot be sent again; instead \(how)")
        }
        guard try store.retry(id, on: connection) else { return nil }
        return outcome
    }
}
