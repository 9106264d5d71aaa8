import Foundation
import RoostPersistence
import RoostProtocol

/// The signed-in caller as a member of one group: what every group use case is given.
struct GroupCaller: Sendable {
    let user: User
    let role: Role
    var isManager: Bool { role.isManager }
    var isOwner: Bool { role == .owner }

    /// 403 unless the caller is the owner or an admin.
    func requireManager(_ message: String) throws(APIError) {
        guard isManager else { throw APIError.forbidden(message) }
    }

    /// 403 unless the caller owns the group.
    func requireOwner(_ message: String) throws(APIError) {
        guard isOwner else { throw APIError.forbidden(message) }
    }
}

/// A change or a read a member makes in one group, run in the transaction that checked the
/// membership (`SignedIn.run(_:in:)`): it is given the caller and the transaction and knows
/// nothing of HTTP, so a test runs it against the database alone. Its input is validated
/// when it is made; `run` checks the caller's right and writes the events.
protocol GroupUseCase: Sendable {
    associatedtype Output: Sendable
    var group: UUID { get }
    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> Output
}

extension APIError {
    /// 403 `forbidden`: the caller is known and may not do this.
    static func forbidden(_ message: String) -> APIError {
        APIError(.forbidden, code: "forbidden", message: message)
    }

    static let noSuchGroup = APIError(.notFound, code: "not_found", message: "no such group")
}
