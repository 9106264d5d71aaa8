import Foundation
import RoostPersistence
import RoostProtocol

/// The signed-in caller as a member of one group: what every group use case is given.
struct GroupCaller: Sendable {
    let user: User
    let role: Role
    /// A tenant coordinator who is no member: acts as an admin (`role` is admin).
    var coordinator = false
    /// Until when a manager muted this member (no chat, info or amber alerts till then); nil: not muted.
    var mutedUntil: Date? = nil
    /// The answer to the use case's `openingQuestion`, asked with the membership check; nil
    /// when it asked none.
    var answer: Bool? = nil
    var isManager: Bool { role.isManager }
    var isOwner: Bool { role == .owner }

    /// 403 unless the caller is the owner or an admin.
    func requireManager(_ message: String) throws(APIError) {
        guard isManager else { throw APIError.forbidden(message) }
    }

    /// 403 `muted` while a manager has muted the caller.
    func requireNotMuted() throws(APIError) {
        guard let mutedUntil else { return }
        throw APIError(.forbidden, code: .muted, message: "a manager of this group muted you until \(APIJSON.time(mutedUntil)); red alerts still go through")
    }

    /// 403 unless the caller owns the group.
    func requireOwner(_ message: String) throws(APIError) {
        guard isOwner else { throw APIError.forbidden(message) }
    }
}

/// A change or a read a member makes in one group, run in the transaction that checked the
/// membership (`SignedIn.run(_:in:)`): it is given the caller and the transaction and knows
/// nothing of HTTP, so a test runs it against the database alone. Its input is validated
/// when it is made; `run` checks the caller's right and writes the events. `run` is the whole
/// of its transaction (nothing runs after it in the same one), so its last statement may
/// commit with it (`PostgresConnection.queryAndCommit`).
protocol GroupUseCase: Sendable {
    associatedtype Output: Sendable
    var group: UUID { get }
    /// A yes-or-no question the round trip that opens the transaction (BEGIN with the session
    /// and membership check) answers too, as a boolean SQL expression in which `caller` is the
    /// caller's user id; its answer is `GroupCaller.answer`. Nil, the default, asks nothing. A
    /// use case that must know something before its first statement learns it so without a
    /// round trip of its own.
    func openingQuestion(caller: SQLQuery) -> SQLQuery?
    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> Output
}

extension GroupUseCase {
    func openingQuestion(caller: SQLQuery) -> SQLQuery? { nil }
}

extension APIError {
    /// 403 `forbidden`: the caller is known and may not do this.
    static func forbidden(_ message: String) -> APIError {
        APIError(.forbidden, code: .forbidden, message: message)
    }

    static let noSuchGroup = APIError(.notFound, code: .notFound, message: "no such group")
}
