import Foundation
import RoostPersistence
import RoostProtocol

/// The audit record of a manager's change (API.md "Accounts": `GET /v1/groups/{gid}/audit`),
/// written in its transaction.
enum Audit {
    static func record(_ caller: GroupCaller, group: UUID, _ action: AuditAction, target: (type: String, id: String)? = nil, data: String = "{}",
                       on connection: PostgresConnection) throws {
        try AuditLog().record(tenant: caller.user.tenantID, group: group, actor: .user(caller.user.id), action: action, target: target, data: data,
                              on: connection)
    }
}
