import Foundation
import RoostPersistence
import RoostProtocol

/// An account's end: `DELETE /v1/me` (API.md "Accounts") and the operator's erasure. Every
/// membership ends with its event, each owned group passes to its longest-standing admin, else
/// its longest-standing member, else is deleted; then the personal data is erased and every
/// session and device goes. One transaction, so a failure leaves the account exactly as it was.
enum AccountDeletion {
    /// What the deletion did to the user's groups.
    struct Outcome: Sendable, Equatable {
        var left: [UUID] = []
        var handedOver: [(group: UUID, to: UUID)] = []
        var deleted: [UUID] = []

        static func == (a: Outcome, b: Outcome) -> Bool {
            a.left == b.left && a.deleted == b.deleted
                && a.handedOver.map(\.group) == b.handedOver.map(\.group) && a.handedOver.map(\.to) == b.handedOver.map(\.to)
        }
    }

    @discardableResult
    static func run(_ user: User, on connection: PostgresConnection) throws -> Outcome {
        var outcome = Outcome()
        let groups = GroupStore()
        let log = GroupEventLog()
        let userID = user.id.lowercasedText
        for (group, role) in try groups.memberships(of: user.id, on: connection) {
            let successor = Role(role) == .owner ? try groups.successor(in: group, excluding: user.id, on: connection) : nil
            if Role(role) == .owner && successor == nil {
                try groups.delete(group: group, on: connection)
                outcome.deleted.append(group)
                continue
            }
            // Leave first, then promote: at most one owner at any moment.
            try groups.removeMember(user.id, from: group, on: connection)
            try log.append(tenant: user.tenantID, group: group, event: .memberLeft, actorType: .user, actorID: user.id,
                           data: RawJSON(#"{"user_id":"\#(userID)","reason":"account_deleted"}"#), subject: user.id, on: connection)
            outcome.left.append(group)
            if let successor {
                try groups.setRole(.owner, of: successor.user, in: group, on: connection)
                let data = #"{"user_id":"\#(successor.user.lowercasedText)","from":"\#(successor.role)","to":"owner","#
                    + #""reason":"owner_deleted"}"#
                try log.append(tenant: user.tenantID, group: group, event: .memberRoleChanged, actorType: .system, actorID: nil,
                               data: RawJSON(data), on: connection)
                outcome.handedOver.append((group, successor.user))
            }
        }
        try UserStore().erase(user: user.id, tenant: user.tenantID, on: connection)
        return outcome
    }
}
