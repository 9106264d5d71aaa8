import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// A user as API.md writes one (`GET /v1/me`, a session).
struct UserView: Encodable {
    @LowercaseID var id: UUID
    let displayName: String
    let email: String?
    let phone: String?
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

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.lowercasedText, forKey: .id)
        try container.encode(displayName, forKey: .displayName)
        try container.encode(email, forKey: .email)  // null, not absent
        try container.encode(phone, forKey: .phone)
        try container.encode(emailVerified, forKey: .emailVerified)
        try container.encode(phoneVerified, forKey: .phoneVerified)
        try container.encode(createdAt, forKey: .createdAt)
    }

    enum CodingKeys: String, CodingKey {
        case id, email, phone
        case displayName = "display_name"
        case emailVerified = "email_verified"
        case phoneVerified = "phone_verified"
        case createdAt = "created_at"
    }
}
