import Foundation
import RoostPersistence
import RoostProtocol

/// A check-in as API.md writes one (its routes, and the account's export).
struct CheckinView: Encodable {
    let checkin: Checkin

    func encode(to encoder: any Encoder) throws {
        func json<Value: Decodable>(_ text: String?, as type: Value.Type) throws -> Value? {
            try text.map { try JSONDecoder().decode(type, from: Data($0.utf8)) }
        }
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(checkin.id.lowercasedText, forKey: .id)
        try container.encode(checkin.groupID.lowercasedText, forKey: .groupID)
        try container.encode(checkin.groupIDs.map { $0.lowercasedText }, forKey: .groupIDs)
        try container.encode(checkin.contactIDs.map { $0.lowercasedText }, forKey: .contactIDs)
        try container.encode(checkin.status, forKey: .status)
        try container.encode(checkin.note, forKey: .note)
        try container.encode(try json(checkin.location, as: Location.self), forKey: .location)
        try container.encode(checkin.locationAt, forKey: .locationAt)
        try container.encode(checkin.battery, forKey: .battery)
        try container.encode(checkin.dueAt, forKey: .dueAt)
        try container.encode(checkin.graceSeconds, forKey: .graceSeconds)
        try container.encode(checkin.promptedAt, forKey: .promptedAt)
        try container.encode(try json(checkin.destination, as: Destination.self), forKey: .destination)
        try container.encode(checkin.stallAfterSeconds, forKey: .stallAfterSeconds)
        try container.encode(checkin.createdAt, forKey: .createdAt)
        try container.encode(checkin.alertedAt, forKey: .alertedAt)
        try container.encode(checkin.endedAt, forKey: .endedAt)
        try container.encode(checkin.endReason, forKey: .reason)
        try container.encode(checkin.alertSeq, forKey: .alertSeq)
    }

    enum CodingKeys: String, CodingKey {
        case id, status, note, location, battery, destination, reason
        case groupID = "group_id"
        case groupIDs = "group_ids"
        case contactIDs = "contact_ids"
        case locationAt = "location_at"
        case dueAt = "due_at"
        case graceSeconds = "grace_s"
        case promptedAt = "prompted_at"
        case stallAfterSeconds = "stall_after_s"
        case createdAt = "created_at"
        case alertedAt = "alerted_at"
        case endedAt = "ended_at"
        case alertSeq = "alert_seq"
    }
}

/// Where a walk ends: a location inside `radius_m` of the point completes the check-in.
struct Destination: Codable, Sendable, Equatable {
    let lat: Double
    let lon: Double
    let radiusM: Double

    enum CodingKeys: String, CodingKey { case lat, lon, radiusM = "radius_m" }

    static let radiusRange = 10.0...5000.0

    /// The destination as stored JSON, once checked (400 naming the field).
    func validatedJSON() throws(APIError) -> String {
        try Location(lat: lat, lon: lon).validate(field: "destination")
        guard Self.radiusRange.contains(radiusM) else {
            throw APIError.invalid("radius_m must be 10 to 5000 metres", "destination.radius_m")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { throw APIError.invalid("the destination is not a place on the map", "destination") }
        return String(decoding: data, as: UTF8.self)
    }
}
