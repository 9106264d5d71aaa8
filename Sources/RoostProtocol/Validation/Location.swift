import Foundation

/// A place on the map (messages, alerts from bridges, check-ins): latitude and longitude in
/// degrees, and how far off it may be in metres.
public struct Location: Codable, Hashable, Sendable {
    public let lat: Double
    public let lon: Double
    public let accuracyM: Double?

    public init(lat: Double, lon: Double, accuracyM: Double? = nil) {
        self.lat = lat
        self.lon = lon
        self.accuracyM = accuracyM
    }

    enum CodingKeys: String, CodingKey { case lat, lon, accuracyM = "accuracy_m" }

    /// Checks the coordinates (400 naming the field under `field`): latitude within ±90,
    /// longitude within ±180, accuracy finite and not negative. NaN is none of these.
    public func validate(field: String = "location") throws(APIError) {
        let prefix = field.isEmpty ? "" : field + "."
        guard (-90...90).contains(lat) else { throw APIError.invalid("lat must be between -90 and 90", prefix + "lat") }
        guard (-180...180).contains(lon) else { throw APIError.invalid("lon must be between -180 and 180", prefix + "lon") }
        if let accuracyM, !(accuracyM >= 0 && accuracyM.isFinite) {
            throw APIError.invalid("accuracy_m must be 0 or more", prefix + "accuracy_m")
        }
    }

    /// The location as JSON text, once its coordinates are checked (400 naming the field).
    public func validatedJSON(field: String = "location") throws(APIError) -> String {
        try validate(field: field)
        // Finite numbers only from here; the encoder writes 1 for 1.0, as the stored JSON always had.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { throw APIError.invalid("the location is not a place on the map", "location") }
        return String(decoding: data, as: UTF8.self)
    }
}

extension Location {
    /// The great-circle distance in metres to `other` (haversine on a sphere of the Earth's
    /// mean radius, as `roost_distance_m` computes it in the database).
    public func distance(to other: Location) -> Double {
        func radians(_ degrees: Double) -> Double { degrees * .pi / 180 }
        let dLat = radians(other.lat - lat), dLon = radians(other.lon - lon)
        let h = pow(sin(dLat / 2), 2) + cos(radians(lat)) * cos(radians(other.lat)) * pow(sin(dLon / 2), 2)
        return 2 * 6_371_008.8 * asin(min(1, h.squareRoot()))
    }
}
