import Foundation
import RoostPersistence
import RoostProtocol

/// `attachments: [media_id]` on what is posted into a group (messages, bridge alerts): at most
/// four, each an upload of the poster's own; linking makes them visible to the group.
enum Attachments {
    static let maxCount = 4

    static func validate(_ ids: [UUID]) throws(APIError) {
        guard ids.count <= maxCount, Set(ids).count == ids.count else {
            throw APIError.invalid("attachments are at most \(maxCount) different uploads", "attachments")
        }
    }

    /// The ids with their JSON, for `NewMessage.attachments`; 400 when one is not the poster's
    /// upload, or was made for an alert (`?for=alert`) and this is not one.
    static func resolve(_ ids: [UUID], uploaderType: String, uploader: UUID, intoAlert: Bool = true,
                        on connection: PostgresConnection) throws -> (ids: [UUID], json: String) {
        guard !ids.isEmpty else { return ([], "[]") }
        guard let json = try MediaStore().attachmentsJSON(ids, uploaderType: uploaderType, uploader: uploader, intoAlert: intoAlert, on: connection) else {
            throw APIError.invalid("an attachment is not an upload of yours (POST /v1/media first), or was made for an alert", "attachments")
        }
        return (ids, json)
    }
}
