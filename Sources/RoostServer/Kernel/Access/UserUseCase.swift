import Foundation
import RoostPersistence
import RoostProtocol

/// A signed-in user's change that is not inside one group they belong to (creating a group,
/// answering an invitation): run in one transaction of the user's tenant after the session
/// is checked in it (`SignedIn.run(_:)`).
protocol UserUseCase: Sendable {
    associatedtype Output: Sendable
    func run(by user: User, on connection: PostgresConnection) throws -> Output
}
