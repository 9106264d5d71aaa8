import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// A user as API.md writes one (`GET /v1/me`, a session).
struct UserView: Encodable {
    @LowercaseID var id: UUID
    let displayName: String
    @Null var email: String?
    @Null var phone: String?
    let emailVerified: Bool
    let phoneVerified: Bool
    let createdAt: Date

    init(_ user: User) {
        id = user.id
        displayName = user.displayName
        email = user.email
        phone = user.phone
        emailVerified = user.emailVerified
        phoneVerified = user.phoneVerified
        createdAt = user.createdAt
    }

    enum CodingKeys: String, CodingKey {
        case id, email, phone
        case displayName = "display_name"
        case emailVerified = "email_verified"
        case phoneVerified = "phone_verified"
        case createdAt = "created_at"
    }
}
