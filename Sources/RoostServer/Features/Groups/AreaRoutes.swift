import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol

/// Where a watch group watches (issue #60): its owner and admins set a polygon or a circle,
/// every member reads it, and a group without one has its tenant's default (set by the
/// operator, `TenantRoutes`). Official warnings reach the groups whose area theirs meets.
struct AreaRoutes: Sendable {
    let auth: Authentication

    /// The most points a group's polygon may have: a street plan's outline, not a survey.
    static let maxPoints = 500
    /// A circle's radius, in metres: a cul-de-sac to a town.
    static let radiusRange = 50.0...100_000.0

    /// `{"polygon": [[lon, lat], ...]}` or `{"circle": {"lat", "lon", "radius_m"}}`.
    struct Body: Decodable, KnownFields {
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
                guard ring.count <= AreaRoutes.maxPoints + 1 else {
                    throw APIError.invalid("a polygon has at most \(AreaRoutes.maxPoints) points", "polygon")
                }
                guard ring.allSatisfy({ $0.count == 2 }) else { throw APIError.invalid("each point of a polygon is [lon, lat]", "polygon") }
                for (index, point) in ring.enumerated() {
                    try Location(lat: point[1], lon: point[0]).validate(field: "polygon.\(index)")
                }
                guard let made = GeoRing(ring.map { Location(lat: $0[1], lon: $0[0]) }) else {
                    throw APIError.invalid("a polygon needs three or more distinct points", "polygon")
                }
                // The closing point may repeat the first: the limit counts the ring's own points.
                guard made.points.count <= AreaRoutes.maxPoints else {
                    throw APIError.invalid("a polygon has at most \(AreaRoutes.maxPoints) points", "polygon")
                }
                return .polygon(made)
            case (nil, let circle?):
                let center = Location(lat: circle.lat, lon: circle.lon)
                try center.validate(field: "circle")
                guard AreaRoutes.radiusRange.contains(circle.radiusM) else {
                    throw APIError.invalid("radius_m must be \(Int(AreaRoutes.radiusRange.lowerBound)) to \(Int(AreaRoutes.radiusRange.upperBound))",
                                           "circle.radius_m")
                }
                return .circle(center: center, radiusMeters: circle.radiusM)
            default:
                throw APIError.invalid("an area is either a polygon or a circle", "polygon")
            }
        }
    }

    /// `{"area": ..., "source": "group" | "tenant" | null}`: the area the group watches, and
    /// whether it is its own or its tenant's default.
    static func view(own: String?, tenantDefault: String?) -> HTTPResponse {
        let (area, source) = own.map { ($0, "\"group\"") } ?? tenantDefault.map { ($0, "\"tenant\"") } ?? ("null", "null")
        return .json(.ok, Array("{\"area\":\(area),\"source\":\(source)}".utf8))
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.get, "/v1/groups/{gid:uuid}/area", signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let (own, tenantDefault) = try await caller.inGroup(group) { _, connection in
                try GroupStore().area(of: group, on: connection) ?? (nil, nil)
            }
            return Self.view(own: own, tenantDefault: tenantDefault)
        }
        builder.add(.put, "/v1/groups/{gid:uuid}/area", bodyLimit: 32 * 1024, signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let area = try context.decodeJSON(Body.self).validated()
            let tenantDefault = try await caller.inGroup(group) { caller, connection in
                try caller.requireManager("only the owner and admins set the group's area")
                try GroupStore().setArea(of: group, to: area.jsonText, on: connection)
                try Audit.record(caller, group: group, .groupAreaChanged, target: ("group", group.lowercasedText),
                                 data: "{\"kind\":\"\(area.pointCount > 0 ? "polygon" : "circle")\",\"points\":\(area.pointCount)}", on: connection)
                return try GroupStore().area(of: group, on: connection)?.tenantDefault
            }
            return Self.view(own: area.jsonText, tenantDefault: tenantDefault)
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}/area", signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let tenantDefault = try await caller.inGroup(group) { caller, connection in
                try caller.requireManager("only the owner and admins set the group's area")
                try GroupStore().setArea(of: group, to: nil, on: connection)
                try Audit.record(caller, group: group, .groupAreaChanged, target: ("group", group.lowercasedText), data: "{\"kind\":null}",
                                 on: connection)
                return try GroupStore().area(of: group, on: connection)?.tenantDefault
            }
            return Self.view(own: nil, tenantDefault: tenantDefault)
        }
    }
}
