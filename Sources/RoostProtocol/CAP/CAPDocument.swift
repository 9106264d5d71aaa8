import Foundation

/// An OASIS CAP 1.1 or 1.2 alert (the Common Alerting Protocol civil protection, weather
/// services and police publish warnings in; issue #60), read from a document by `XMLReader`:
/// what a watch group needs of it. Pure. An area's polygon is `lat,lon lat,lon ...` (CAP puts
/// latitude first) and its circle `lat,lon radius`, the radius in kilometres.
public struct CAPAlert: Equatable, Sendable {
    public enum Version: String, Sendable {
        case v11 = "urn:oasis:names:tc:emergency:cap:1.1"
        case v12 = "urn:oasis:names:tc:emergency:cap:1.2"
    }

    /// An earlier message this one updates or cancels: `sender,identifier,sent`.
    public struct Reference: Equatable, Sendable {
        public let sender: String
        public let identifier: String

        public init(sender: String, identifier: String) { (self.sender, self.identifier) = (sender, identifier) }
    }

    public let version: Version
    public let identifier: String
    public let sender: String
    public let sent: Date
    /// Actual, Exercise, System, Test or Draft.
    public let status: String
    /// Alert, Update, Cancel, Ack or Error.
    public let msgType: String
    public let scope: String
    public let references: [Reference]
    public let infos: [CAPInfo]

    /// The most points a polygon of a warning may have, and the most areas, infos and shapes a
    /// document may carry: past them the document is refused, not cut.
    public static let maxPolygonPoints = 10_000
    public static let maxInfos = 16
    public static let maxAreas = 64
    public static let maxShapes = 64

    /// Why a document is not a CAP alert Roost takes.
    public struct Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    /// Reads a CAP alert from a document's bytes.
    public static func read(_ bytes: [UInt8], limits: XMLReader.Limits = XMLReader.Limits()) throws(Refusal) -> CAPAlert {
        let root: XMLElement
        do {
            root = try XMLReader.parse(bytes, limits: limits)
        } catch {
            throw Refusal(reason: "not XML Roost reads: \(error)")
        }
        return try read(root)
    }

    /// Reads a CAP alert from an element (a document's root, or one inside a feed's entry).
    public static func read(_ root: XMLElement) throws(Refusal) -> CAPAlert {
        guard root.name == "alert", let namespace = root.namespace, let version = Version(rawValue: namespace) else {
            throw Refusal(reason: "not a CAP 1.1 or 1.2 alert (the root is \(root.namespace ?? "")|\(root.name))")
        }
        func required(_ name: String) throws(Refusal) -> String {
            guard let text = root.child(name, in: namespace)?.text.trimmed, !text.isEmpty else { throw Refusal(reason: "the alert has no \(name)") }
            return text
        }
        let identifier = try required("identifier"), sender = try required("sender")
        guard let sent = CAPTime.date(try required("sent")) else { throw Refusal(reason: "the alert's sent is not a CAP time") }
        let references = (root.child("references", in: namespace)?.text.trimmed ?? "").split(whereSeparator: \.isWhitespace).compactMap { triple -> Reference? in
            let parts = triple.split(separator: ",", omittingEmptySubsequences: false)
            return parts.count >= 2 ? Reference(sender: String(parts[0]), identifier: String(parts[1])) : nil
        }
        let infoElements = root.children("info", in: namespace)
        guard infoElements.count <= maxInfos else { throw Refusal(reason: "more than \(maxInfos) info blocks") }
        var infos: [CAPInfo] = []
        for element in infoElements { infos.append(try CAPInfo(element, namespace: namespace)) }
        return CAPAlert(version: version, identifier: identifier, sender: sender, sent: sent, status: try required("status"),
                        msgType: try required("msgType"), scope: try required("scope"), references: references, infos: infos)
    }
}

/// One `info` block: the warning in one language.
public struct CAPInfo: Equatable, Sendable {
    public let language: String
    public let event: String
    public let urgency: String
    /// Extreme, Severe, Moderate, Minor or Unknown.
    public let severity: String
    public let certainty: String
    public let effective: Date?
    public let expires: Date?
    public let senderName: String?
    public let headline: String?
    public let description: String?
    public let instruction: String?
    public let web: String?
    public let areas: [CAPArea]

    init(_ element: XMLElement, namespace: String) throws(CAPAlert.Refusal) {
        func text(_ name: String) -> String? {
            element.child(name, in: namespace)?.text.trimmed.nonEmpty
        }
        func required(_ name: String) throws(CAPAlert.Refusal) -> String {
            guard let value = text(name) else { throw CAPAlert.Refusal(reason: "an info block has no \(name)") }
            return value
        }
        func time(_ name: String) throws(CAPAlert.Refusal) -> Date? {
            guard let value = text(name) else { return nil }
            guard let date = CAPTime.date(value) else { throw CAPAlert.Refusal(reason: "an info block's \(name) is not a CAP time") }
            return date
        }
        language = text("language") ?? "en-US"
        event = try required("event")
        urgency = try required("urgency")
        severity = try required("severity")
        certainty = try required("certainty")
        effective = try time("effective")
        expires = try time("expires")
        senderName = text("senderName")
        headline = text("headline")
        description = text("description")
        instruction = text("instruction")
        web = text("web")
        let areaElements = element.children("area", in: namespace)
        guard areaElements.count <= CAPAlert.maxAreas else { throw CAPAlert.Refusal(reason: "more than \(CAPAlert.maxAreas) areas in an info block") }
        var areas: [CAPArea] = []
        for area in areaElements { areas.append(try CAPArea(area, namespace: namespace)) }
        self.areas = areas
    }
}

/// One `area`: its description, and the shapes and codes that say where it is.
public struct CAPArea: Equatable, Sendable {
    public let description: String
    public let shapes: [GeoArea]
    /// `valueName` and `value` pairs (a FIPS, EMMA_ID, or postcode...); Roost places an area by its shapes only.
    public let geocodes: [Geocode]

    public struct Geocode: Equatable, Sendable {
        public let name: String
        public let value: String

        public init(name: String, value: String) { (self.name, self.value) = (name, value) }
    }

    init(_ element: XMLElement, namespace: String) throws(CAPAlert.Refusal) {
        description = element.child("areaDesc", in: namespace)?.text.trimmed ?? ""
        let polygons = element.children("polygon", in: namespace), circles = element.children("circle", in: namespace)
        guard polygons.count + circles.count <= CAPAlert.maxShapes else { throw CAPAlert.Refusal(reason: "more than \(CAPAlert.maxShapes) shapes in an area") }
        var shapes: [GeoArea] = []
        for polygon in polygons {
            let pairs = polygon.text.split(whereSeparator: \.isWhitespace)
            guard pairs.count <= CAPAlert.maxPolygonPoints + 1 else {
                throw CAPAlert.Refusal(reason: "a polygon of more than \(CAPAlert.maxPolygonPoints) points")
            }
            var points: [Location] = []
            for pair in pairs {
                guard let point = Self.point(pair) else { throw CAPAlert.Refusal(reason: "a polygon point that is not lat,lon on the map") }
                points.append(point)
            }
            guard let ring = GeoRing(points) else { throw CAPAlert.Refusal(reason: "a polygon of fewer than three distinct points") }
            shapes.append(.polygon(ring))
        }
        for circle in circles {
            let parts = circle.text.split(whereSeparator: \.isWhitespace)
            guard parts.count == 2, let center = Self.point(parts[0]), let kilometres = Double(parts[1]), kilometres.isFinite, kilometres >= 0 else {
                throw CAPAlert.Refusal(reason: "a circle that is not lat,lon radius")
            }
            // A radius of 0 is a point: a metre, so it can still be met.
            shapes.append(.circle(center: center, radiusMeters: max(1, kilometres * 1000)))
        }
        self.shapes = shapes
        geocodes = element.children("geocode", in: namespace).compactMap { code in
            guard let name = code.child("valueName", in: namespace)?.text.trimmed, let value = code.child("value", in: namespace)?.text.trimmed else {
                return nil
            }
            return Geocode(name: name, value: value)
        }
    }

    static func point(_ pair: Substring) -> Location? {
        let parts = pair.split(separator: ",")
        guard parts.count == 2, let lat = Double(parts[0]), let lon = Double(parts[1]), lat.isFinite, lon.isFinite,
              (-90...90).contains(lat), (-180...180).contains(lon) else { return nil }
        return Location(lat: lat, lon: lon)
    }
}

/// CAP's times: `YYYY-MM-DDThh:mm:ss` and an offset (`+hh:mm`, `-hh:mm`; 1.1 senders also
/// write `Z`), seconds and no fraction.
public enum CAPTime {
    public static func date(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20 || bytes.count == 25, bytes[4] == 0x2D, bytes[7] == 0x2D, bytes[10] == 0x54, bytes[13] == 0x3A, bytes[16] == 0x3A else {
            return nil
        }
        func number(_ range: Range<Int>) -> Int64? {
            guard bytes[range].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return bytes[range].reduce(0) { $0 * 10 + Int64($1 - 0x30) }
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
              let minute = number(14..<16), let second = number(17..<19), (1...12).contains(month), (1...31).contains(day), hour < 24,
              minute < 60, second < 61 else { return nil }
        var offset: Int64 = 0
        if bytes.count == 25 {
            guard bytes[19] == 0x2B || bytes[19] == 0x2D, bytes[22] == 0x3A, let hours = number(20..<22), let minutes = number(23..<25),
                  hours < 24, minutes < 60 else { return nil }
            offset = (hours * 3600 + minutes * 60) * (bytes[19] == 0x2D ? -1 : 1)
        } else {
            guard bytes[19] == 0x5A else { return nil }
        }
        let days = CivilCalendar.days(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second - offset))
    }

    /// A time as CAP 1.2 writes it, in UTC: `2026-11-28T09:05:00-00:00` (CAP forbids `Z`).
    public static func text(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let (year, month, day) = CivilCalendar.date(days: days)
        let inDay = seconds - days * 86_400
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(inDay / 3600)):\(two(inDay / 60 % 60)):\(two(inDay % 60))-00:00"
    }
}

extension String {
    var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
    var nonEmpty: String? { isEmpty ? nil : self }
}
