import Foundation
import RoostPersistence
import RoostProtocol

/// A member has read the group up to `seq`: their marker moves forward only (never past the
/// group's newest seq), and their other devices hear of it (`read.updated` on their streams).
struct MarkRead: GroupUseCase {
    let group: UUID
    let seq: Int64

    init(group: UUID, seq: Int64) throws(APIError) {
        guard seq >= 0 else { throw APIError.invalid("seq must be a whole number ≥ 0", "seq") }
        self.group = group
        self.seq = seq
    }

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws {
        guard let (marker, moved) = try GroupStore().markRead(group: group, user: caller.user.id, through: seq, on: connection), moved else { return }
        let data = "{\"group_id\":\"\(group.lowercasedText)\",\"seq\":\(marker)}"
        try GroupEventLog.notifyUser(tenant: caller.user.tenantID, user: caller.user.id, event: .readUpdated, data: data, on: connection)
    }
}
