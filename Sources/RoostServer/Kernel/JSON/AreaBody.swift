import RoostHTTP
import RoostProtocol

/// An area as the API takes it (a group's, a tenant's default; issue #60):
/// `{"polygon": [[lon, lat], ...]}` or `{"circle": {"lat", "lon", "radius_m"}}`.
struct AreaBody: Decodable, KnownFields {
    /// The most points a polygon may have: a street plan's outline, not a survey.
    static let maxPoints = 500
    /// A circle's radius, in metres: a cul-de-sac to a town.
    static let radiusRange = 50.0...100_000.0

    static let fieldNames: Set<String> = ["polygon", "circle"]
    let polygon: [[Double]]?
    let circle: CircleBody?

    struct CircleBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = ["lat", "lon", "radius_m"]
        let lat: Double
        let lon: Double
        let radiusM: Double
        enum CodingKeys: String, CodingKey { case lat, lon, radiusM = "radius_m" }
    }

    /// The area, checked: 400 naming the field at fault.
    func validated() throws(APIError) -> GeoArea {
        switch (polygon, circle) {
        case (let ring?, nil):
            guard ring.count <= AreaBody.maxPoints + 1 else {
                throw APIError.invalid("a polygon has at most \(AreaBody.maxPoints) points", "polygon")
            }
            guard ring.allSatisfy({ $0.count == 2 }) else { throw APIError.invalid("each point of a polygon is [lon, lat]", "polygon") }
            for (index, point) in ring.enumerated() {
                try Location(lat: point[1], lon: point[0]).validate(field: "polygon.\(index)")
            }
            guard let made = GeoRing(ring.map { Location(lat: $0[1], lon: $0[0]) }) else {
                throw APIError.invalid("a polygon needs three or more distinct points", "polygon")
            }
            // The closing point may repeat the first: the limit counts the ring's own points.
            guard made.points.count <= AreaBody.maxPoints else {
                throw APIError.invalid("a polygon has at most \(AreaBody.maxPoints) points", "polygon")
            }
            return .polygon(made)
        case (nil, let circle?):
            let center = Location(lat: circle.lat, lon: circle.lon)
            try center.validate(field: "circle")
            guard AreaBody.radiusRange.contains(circle.radiusM) else {
                throw APIError.invalid("radius_m must be \(Int(AreaBody.radiusRange.lowerBound)) to \(Int(AreaBody.radiusRange.upperBound))",
                                       "circle.radius_m")
            }
            return .circle(center: center, radiusMeters: circle.radiusM)
        default:
            throw APIError.invalid("an area is either a polygon or a circle", "polygon")
        }
    }
}
