import Foundation
import RoostProtocol
import Testing

/// The geometry of group areas and warnings' areas, on awkward shapes: concave, across the
/// antimeridian, a few metres, half the world; points on edges; circles just reaching and just
/// missing.
struct GeoAreaTests {
    static func ring(_ points: [(lon: Double, lat: Double)]) -> GeoArea {
        .polygon(GeoRing(points.map { Location(lat: $0.lat, lon: $0.lon) })!)
    }

    static func at(_ lon: Double, _ lat: Double) -> Location { Location(lat: lat, lon: lon) }

    /// Metres in a degree of longitude at the equator, as `Location.distance` measures it.
    static let metresPerDegree = 6_371_008.8 * .pi / 180

    @Test func aConcaveRingHoldsItsArmsAndNotItsNotch() {
        // A U: two arms joined at the bottom, the notch between them open to the north.
        let u = Self.ring([(0, 0), (3, 0), (3, 3), (2, 3), (2, 1), (1, 1), (1, 3), (0, 3), (0, 0)])
        #expect(u.contains(Self.at(0.5, 2.5)) && u.contains(Self.at(2.5, 2.5)) && u.contains(Self.at(1.5, 0.5)))
        #expect(!u.contains(Self.at(1.5, 2)), "the notch")
        #expect(!u.contains(Self.at(4, 1)) && !u.contains(Self.at(1.5, -0.1)))
        // On an edge and on a corner is inside.
        #expect(u.contains(Self.at(3, 1.5)) && u.contains(Self.at(2, 3)) && u.contains(Self.at(1.5, 1)))
        // A ring in the notch meets the U nowhere; one across the notch meets both arms.
        #expect(!u.intersects(Self.ring([(1.2, 1.5), (1.8, 1.5), (1.8, 2.5), (1.2, 2.5)])))
        #expect(u.intersects(Self.ring([(0.5, 2), (2.5, 2), (2.5, 2.2), (0.5, 2.2)])))
    }

    @Test func aRingAcrossTheAntimeridianHoldsBothSidesAndNotTheWorldBetween() {
        // Fiji's side of the date line: 170°E to 170°W, as a CAP feed lists it.
        let fiji = Self.ring([(170, -20), (-170, -20), (-170, -10), (170, -10)])
        #expect(fiji.contains(Self.at(180, -15)) && fiji.contains(Self.at(-180, -15)))
        #expect(fiji.contains(Self.at(175, -15)) && fiji.contains(Self.at(-175, -15)))
        #expect(!fiji.contains(Self.at(0, -15)) && !fiji.contains(Self.at(160, -15)) && !fiji.contains(Self.at(-160, -15)))
        // Another ring given on the other side of the line still meets it; one far away does not.
        #expect(fiji.intersects(Self.ring([(-178, -12), (-172, -12), (-172, -8), (-178, -8)])))
        #expect(fiji.intersects(Self.ring([(179, -30), (181 - 360, -30), (181 - 360, -15), (179, -15)])))
        #expect(!fiji.intersects(Self.ring([(10, -20), (20, -20), (20, -10), (10, -10)])))
        // A circle on the line, and one just east of the ring's east edge.
        #expect(fiji.intersects(.circle(center: Self.at(180, -25), radiusMeters: 600_000)))
        #expect(!fiji.intersects(.circle(center: Self.at(-160, -15), radiusMeters: 500_000)))
    }

    @Test func aRingOfAFewMetresHoldsItsMiddleAndNotTheHouseNextDoor() {
        // Five metres a side, in Copenhagen.
        let side = 5 / Self.metresPerDegree
        let yard = Self.ring([(12.5683, 55.6761), (12.5683 + side * 1.78, 55.6761), (12.5683 + side * 1.78, 55.6761 + side),
                              (12.5683, 55.6761 + side)])
        #expect(yard.contains(Self.at(12.5683 + side * 0.89, 55.6761 + side / 2)))
        #expect(!yard.contains(Self.at(12.5683 + side * 0.89, 55.6761 + side * 3)))
        #expect(yard.intersects(.circle(center: Self.at(12.5683 - side * 1.78, 55.6761 + side / 2), radiusMeters: 6)),
                "a circle 5 m west reaching 6 m")
        #expect(!yard.intersects(.circle(center: Self.at(12.5683 - side * 1.78, 55.6761 + side / 2), radiusMeters: 4)))
    }

    @Test func aRingOfHalfTheWorldHoldsWhatIsInsideIt() {
        // Its edges are each less than 180° of longitude long: an edge runs the shorter way round.
        let huge = Self.ring([(-120, -60), (0, -60), (120, -60), (120, 60), (0, 60), (-120, 60)])
        #expect(huge.contains(Self.at(0, 0)) && huge.contains(Self.at(100, 50)) && !huge.contains(Self.at(150, 0)))
        #expect(huge.intersects(.circle(center: Self.at(10, 10), radiusMeters: 1_000)), "a small circle well inside")
        #expect(huge.intersects(Self.ring([(1, 1), (2, 1), (2, 2)])), "a small ring inside it, no edge crossing")
        #expect(Self.ring([(1, 1), (2, 1), (2, 2)]).intersects(huge), "and the other way round")
        // The same corners without the midpoints: each edge of 240° runs the shorter way, across
        // the Pacific, so the ring is the Pacific's.
        let pacific = Self.ring([(-120, -60), (120, -60), (120, 60), (-120, 60)])
        #expect(pacific.contains(Self.at(180, 0)) && pacific.contains(Self.at(150, 0)) && !pacific.contains(Self.at(0, 0)))
    }

    @Test func aCircleMeetsARingWhenItReachesAnEdgeAndNotWhenItFallsShort() {
        // A square at the equator, its west edge at longitude 0; the centre 111 m west of it.
        let square = Self.ring([(0, 0), (0.01, 0), (0.01, 0.01), (0, 0.01)])
        let west = Self.at(-0.001, 0.005)
        let gap = west.distance(to: Self.at(0, 0.005))
        #expect(abs(gap - 111.2) < 1)
        #expect(square.intersects(.circle(center: west, radiusMeters: gap + 1)))
        #expect(!square.intersects(.circle(center: west, radiusMeters: gap - 1)))
        #expect(square.intersects(.circle(center: Self.at(0.005, 0.005), radiusMeters: 1)), "a circle inside")
        #expect(GeoArea.circle(center: west, radiusMeters: gap + 1).intersects(square), "either way round")
    }

    @Test func circlesMeetWhenTheirRadiiCoverTheDistance() {
        let a = Self.at(12.5683, 55.6761), b = Self.at(12.5783, 55.6761)
        let apart = a.distance(to: b)
        #expect(GeoArea.circle(center: a, radiusMeters: apart / 2 + 1).intersects(.circle(center: b, radiusMeters: apart / 2)))
        #expect(!GeoArea.circle(center: a, radiusMeters: apart / 2 - 1).intersects(.circle(center: b, radiusMeters: apart / 2)))
        #expect(GeoArea.circle(center: a, radiusMeters: 100).contains(Self.at(12.5684, 55.6761)))
    }

    @Test func whatIsNoRingIsRefused() {
        #expect(GeoRing([Self.at(0, 0), Self.at(1, 1)]) == nil, "two points")
        #expect(GeoRing([Self.at(0, 0), Self.at(1, 1), Self.at(0, 0), Self.at(1, 1)]) == nil, "two distinct points")
        #expect(GeoRing([Self.at(0, 0), Self.at(1, 91), Self.at(2, 0)]) == nil, "a latitude past the pole")
        #expect(GeoRing([Self.at(0, 0), Self.at(181, 1), Self.at(2, 0)]) == nil)
        #expect(GeoRing([Self.at(0, 0), Self.at(.nan, 1), Self.at(2, 0)]) == nil)
        // A closed ring and the same ring open are one ring.
        #expect(GeoRing([Self.at(0, 0), Self.at(1, 0), Self.at(1, 1), Self.at(0, 0)]) == GeoRing([Self.at(0, 0), Self.at(1, 0), Self.at(1, 1)]))
    }

    @Test func anAreaIsTheSameJSONAfterARoundTrip() throws {
        let areas: [GeoArea] = [Self.ring([(12.5, 55.6), (12.6, 55.6), (12.6, 55.7)]), .circle(center: Self.at(12.5683, 55.6761), radiusMeters: 800)]
        for area in areas {
            let back = try JSONDecoder().decode(GeoArea.self, from: Data(area.jsonText.utf8))
            #expect(back == area && back.jsonText == area.jsonText)
        }
        #expect(areas[1].jsonText == #"{"circle":{"lat":55.6761,"lon":12.5683,"radius_m":800}}"#)
        for bad in [#"{"polygon":[[0,0],[1,1]]}"#, #"{"circle":{"lat":95,"lon":0,"radius_m":5}}"#, #"{}"#, #"{"polygon":[[0,0,1],[1,1],[2,0]]}"#] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(GeoArea.self, from: Data(bad.utf8)) }
        }
    }
}
