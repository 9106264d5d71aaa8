import Foundation

/// An area on the map (a watch group's streets, a warning's reach): a polygon, a closed ring of
/// points as GeoJSON and CAP give them, or a circle, a centre and a radius in metres. Pure
/// geometry: a ring is taken on the plane of longitude and latitude (as CAP draws its areas),
/// unwrapped where it crosses the antimeridian; distances to a circle are measured on the
/// sphere, or in a plane tangent at the circle's centre.
public enum GeoArea: Equatable, Sendable {
    case polygon(GeoRing)
    case circle(center: Location, radiusMeters: Double)

    /// Whether `point` is inside the area or on its edge.
    public func contains(_ point: Location) -> Bool {
        switch self {
        case .polygon(let ring): ring.contains(point)
        case .circle(let center, let radius): center.distance(to: point) <= radius
        }
    }

    /// Whether the two areas share any point (one inside the other counts).
    public func intersects(_ other: GeoArea) -> Bool {
        switch (self, other) {
        case (.circle(let a, let ra), .circle(let b, let rb)):
            a.distance(to: b) <= ra + rb
        case (.polygon(let ring), .circle(let center, let radius)), (.circle(let center, let radius), .polygon(let ring)):
            ring.intersects(circle: center, radiusMeters: radius)
        case (.polygon(let a), .polygon(let b)):
            a.intersects(b)
        }
    }
}

/// A polygon's ring: at least three distinct points, closed (the last joins the first whether
/// or not it repeats it). Each edge runs the shorter way round the globe: longitudes are
/// unwrapped along the ring, so one that crosses ±180° (170°, then -170°) runs on past 180°
/// instead of jumping back across the map, and a ring wider than half the world needs points
/// between its corners (as GeoJSON's and CAP's rings have).
public struct GeoRing: Equatable, Sendable {
    /// The points as given, without a repeated closing point.
    public let points: [Location]
    /// (x, y) = (unwrapped longitude, latitude) of each point.
    private let plane: [Planar]

    private struct Planar: Equatable {
        let x: Double
        let y: Double
    }

    /// Nil when the points are not a ring: fewer than three distinct ones, or a coordinate off
    /// the map (latitude beyond ±90, longitude beyond ±180, not finite).
    public init?(_ points: [Location]) {
        var points = points
        if points.count > 1, let first = points.first, let last = points.last, first.lat == last.lat && first.lon == last.lon {
            points.removeLast()
        }
        guard points.allSatisfy({ $0.lat.isFinite && $0.lon.isFinite && (-90...90).contains($0.lat) && (-180...180).contains($0.lon) }),
              Set(points.map { "\($0.lat),\($0.lon)" }).count >= 3 else { return nil }
        self.points = points
        var plane: [Planar] = []
        plane.reserveCapacity(points.count)
        for point in points {
            guard let last = plane.last, let previous = plane.isEmpty ? nil : points[plane.count - 1] else {
                plane.append(Planar(x: point.lon, y: point.lat))
                continue
            }
            plane.append(Planar(x: last.x + Self.eastward(from: previous.lon, to: point.lon), y: point.lat))
        }
        self.plane = plane
    }

    /// The shorter way from one longitude to another, in degrees (east positive).
    private static func eastward(from a: Double, to b: Double) -> Double {
        var delta = b - a
        if delta > 180 { delta -= 360 }
        if delta < -180 { delta += 360 }
        return delta
    }

    /// The copies of a longitude a ring unwrapped past ±180° may hold it as.
    private static func copies(_ x: Double) -> [Double] { [x, x + 360, x - 360] }

    public static func == (lhs: GeoRing, rhs: GeoRing) -> Bool { lhs.points == rhs.points }

    // MARK: - Points

    func contains(_ point: Location) -> Bool {
        Self.copies(point.lon).contains { contains(Planar(x: $0, y: point.lat)) }
    }

    private func contains(_ p: Planar) -> Bool { Self.contains(p, in: plane) }

    private static func onSegment(_ p: Planar, _ a: Planar, _ b: Planar) -> Bool {
        let cross = (b.x - a.x) * (p.y - a.y) - (b.y - a.y) * (p.x - a.x)
        let length = max(abs(b.x - a.x), abs(b.y - a.y))
        guard abs(cross) <= 1e-12 * max(1, length) else { return false }
        return p.x >= min(a.x, b.x) - 1e-12 && p.x <= max(a.x, b.x) + 1e-12 && p.y >= min(a.y, b.y) - 1e-12 && p.y <= max(a.y, b.y) + 1e-12
    }

    // MARK: - Rings

    /// Whether two rings share a point: an edge of one crosses an edge of the other, or one
    /// lies inside the other; tried with the other ring moved a turn east and west too, for
    /// rings unwrapped on different sides of ±180°.
    func intersects(_ other: GeoRing) -> Bool {
        for shift in [0.0, 360, -360] {
            let moved = other.plane.map { Planar(x: $0.x + shift, y: $0.y) }
            guard Self.boxesMeet(plane, moved) else { continue }
            if contains(moved[0]) || GeoRing.contains(plane[0], in: moved) { return true }
            var j = plane.count - 1
            for i in plane.indices {
                var l = moved.count - 1
                for k in moved.indices {
                    if Self.segmentsMeet(plane[j], plane[i], moved[l], moved[k]) { return true }
                    l = k
                }
                j = i
            }
        }
        return false
    }

    /// Even-odd ray casting, with a point on an edge inside.
    private static func contains(_ p: Planar, in ring: [Planar]) -> Bool {
        var inside = false
        var j = ring.count - 1
        for i in ring.indices {
            let (a, b) = (ring[i], ring[j])
            if onSegment(p, a, b) { return true }
            if (a.y > p.y) != (b.y > p.y), p.x < a.x + (p.y - a.y) / (b.y - a.y) * (b.x - a.x) { inside.toggle() }
            j = i
        }
        return inside
    }

    private static func boxesMeet(_ a: [Planar], _ b: [Planar]) -> Bool {
        func box(_ points: [Planar]) -> (minX: Double, maxX: Double, minY: Double, maxY: Double) {
            points.reduce((Double.infinity, -Double.infinity, Double.infinity, -Double.infinity)) {
                (min($0.0, $1.x), max($0.1, $1.x), min($0.2, $1.y), max($0.3, $1.y))
            }
        }
        let (p, q) = (box(a), box(b))
        return p.minX <= q.maxX && q.minX <= p.maxX && p.minY <= q.maxY && q.minY <= p.maxY
    }

    /// Whether segments ab and cd share a point (touching counts).
    private static func segmentsMeet(_ a: Planar, _ b: Planar, _ c: Planar, _ d: Planar) -> Bool {
        func orientation(_ p: Planar, _ q: Planar, _ r: Planar) -> Double { (q.x - p.x) * (r.y - p.y) - (q.y - p.y) * (r.x - p.x) }
        let (d1, d2, d3, d4) = (orientation(c, d, a), orientation(c, d, b), orientation(a, b, c), orientation(a, b, d))
        if ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)) { return true }
        return onSegment(a, c, d) || onSegment(b, c, d) || onSegment(c, a, b) || onSegment(d, a, b)
    }

    // MARK: - Circles

    /// Whether the circle and the ring share a point: its centre is inside, or an edge passes
    /// within the radius (measured in a plane tangent at the centre, in metres).
    func intersects(circle center: Location, radiusMeters: Double) -> Bool {
        if contains(center) { return true }
        let metresPerDegree = 6_371_008.8 * .pi / 180
        let scale = cos(center.lat * .pi / 180)
        // Each point relative to the centre, east and north in metres, the shorter way round in longitude.
        let local = points.map { point in
            (x: Self.eastward(from: center.lon, to: point.lon) * metresPerDegree * scale, y: (point.lat - center.lat) * metresPerDegree)
        }
        var j = local.count - 1
        for i in local.indices {
            if Self.distanceToOrigin(local[j], local[i]) <= radiusMeters { return true }
            j = i
        }
        return false
    }

    /// The distance from (0, 0) to the segment ab.
    private static func distanceToOrigin(_ a: (x: Double, y: Double), _ b: (x: Double, y: Double)) -> Double {
        let (dx, dy) = (b.x - a.x, b.y - a.y)
        let length = dx * dx + dy * dy
        let t = length == 0 ? 0 : max(0, min(1, -(a.x * dx + a.y * dy) / length))
        let (x, y) = (a.x + t * dx, a.y + t * dy)
        return (x * x + y * y).squareRoot()
    }
}

// MARK: - JSON

/// As the API and the database hold an area: `{"polygon": [[lon, lat], ...]}` (GeoJSON's order,
/// the ring closed or not) or `{"circle": {"lat", "lon", "radius_m"}}`.
extension GeoArea: Codable {
    private enum Keys: String, CodingKey { case polygon, circle }
    private struct Circle: Codable {
        let lat: Double
        let lon: Double
        let radiusM: Double
        enum CodingKeys: String, CodingKey { case lat, lon, radiusM = "radius_m" }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        switch (try container.decodeIfPresent([[Double]].self, forKey: .polygon), try container.decodeIfPresent(Circle.self, forKey: .circle)) {
        case (let ring?, nil):
            guard ring.allSatisfy({ $0.count == 2 }), let made = GeoRing(ring.map { Location(lat: $0[1], lon: $0[0]) }) else {
                throw DecodingError.dataCorruptedError(forKey: .polygon, in: container,
                                                       debugDescription: "a polygon is three or more distinct points, each [lon, lat] on the map")
            }
            self = .polygon(made)
        case (nil, let circle?):
            guard (-90...90).contains(circle.lat), (-180...180).contains(circle.lon), circle.radiusM.isFinite, circle.radiusM > 0 else {
                throw DecodingError.dataCorruptedError(forKey: .circle, in: container,
                                                       debugDescription: "a circle is a centre on the map and a radius_m of more than 0")
            }
            self = .circle(center: Location(lat: circle.lat, lon: circle.lon), radiusMeters: circle.radiusM)
        default:
            throw DecodingError.dataCorruptedError(forKey: .polygon, in: container, debugDescription: "an area is a polygon or a circle, one of them")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .polygon(let ring): try container.encode(ring.points.map { [$0.lon, $0.lat] }, forKey: .polygon)
        case .circle(let center, let radius): try container.encode(Circle(lat: center.lat, lon: center.lon, radiusM: radius), forKey: .circle)
        }
    }

    /// The area as JSON text (sorted keys: the same area is the same text).
    public var jsonText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }

    /// The points of its ring (a circle: none).
    public var pointCount: Int {
        if case .polygon(let ring) = self { ring.points.count } else { 0 }
    }
}
