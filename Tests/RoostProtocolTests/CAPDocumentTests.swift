import Foundation
import RoostProtocol
import Testing

/// CAP documents shaped as real publishers write them (the US National Weather Service's
/// polygons and SAME codes, MeteoAlarm's language blocks and EMMA_ID geocodes, an earthquake
/// circle, CAP 1.1 with a prefixed namespace), and what the reader refuses: document types
/// (the billion laughs, external entities), undefined entities, other encodings, deep nesting,
/// a polygon of 100,000 points, broken XML.
struct CAPDocumentTests {
    static let thunderstorm = """
        <?xml version="1.0" encoding="UTF-8"?>
        <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2">
          <identifier>NOAA-NWS-ALERTS-NV1200001</identifier>
          <sender>w-nws.webmaster@noaa.gov</sender>
          <sent>2026-11-28T14:57:00-08:00</sent>
          <status>Actual</status>
          <msgType>Alert</msgType>
          <scope>Public</scope>
          <info>
            <language>en-US</language>
            <category>Met</category>
            <event>SEVERE THUNDERSTORM</event>
            <urgency>Immediate</urgency>
            <severity>Severe</severity>
            <certainty>Observed</certainty>
            <expires>2026-11-28T16:00:00-08:00</expires>
            <senderName>NATIONAL WEATHER SERVICE SACRAMENTO CA</senderName>
            <headline>SEVERE THUNDERSTORM WARNING</headline>
            <description><![CDATA[AT 254 PM PST... A SEVERE THUNDERSTORM & HAIL <1 INCH> MOVING EAST.]]></description>
            <instruction>TAKE COVER IN A SUBSTANTIAL SHELTER UNTIL THE STORM PASSES.</instruction>
            <web>https://www.weather.gov/sto/</web>
            <area>
              <areaDesc>EXTREME NORTH CENTRAL TUOLUMNE COUNTY IN CALIFORNIA</areaDesc>
              <polygon>38.47,-120.14 38.34,-119.95 38.52,-119.74 38.62,-119.89 38.47,-120.14</polygon>
              <geocode><valueName>SAME</valueName><value>006109</value></geocode>
            </area>
          </info>
        </alert>
        """

    @Test func aWeatherServicesPolygonWarningIsReadWhole() throws {
        let alert = try CAPAlert.read(Array(Self.thunderstorm.utf8))
        #expect(alert.version == .v12 && alert.identifier == "NOAA-NWS-ALERTS-NV1200001" && alert.sender == "w-nws.webmaster@noaa.gov")
        #expect(alert.sent == Date(timeIntervalSince1970: 1_795_906_620), "14:57 at -08:00 is 22:57 UTC")
        #expect(alert.status == "Actual" && alert.msgType == "Alert" && alert.scope == "Public" && alert.references.isEmpty)
        let info = try #require(alert.infos.first)
        #expect(info.severity == "Severe" && info.urgency == "Immediate" && info.certainty == "Observed" && info.event == "SEVERE THUNDERSTORM")
        #expect(info.description == "AT 254 PM PST... A SEVERE THUNDERSTORM & HAIL <1 INCH> MOVING EAST.", "CDATA kept as it is")
        #expect(info.expires == Date(timeIntervalSince1970: 1_795_910_400) && info.web == "https://www.weather.gov/sto/")
        let area = try #require(info.areas.first)
        #expect(area.geocodes == [CAPArea.Geocode(name: "SAME", value: "006109")])
        guard case .polygon(let ring) = try #require(area.shapes.first) else { Issue.record("no polygon"); return }
        #expect(ring.points.count == 4 && ring.points[0] == Location(lat: 38.47, lon: -120.14), "lat first, the closing point dropped")
        #expect(area.shapes[0].contains(Location(lat: 38.48, lon: -119.95)))
    }

    @Test func anUpdateACancelACircleAndLanguageBlocksAreRead() throws {
        let update = """
            <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>2.49.0.1.578.0.20261128101500.007</identifier>
            <sender>urn:oid:2.49.0.0.578.0</sender><sent>2026-11-28T10:15:00+01:00</sent><status>Actual</status><msgType>Update</msgType>
            <scope>Public</scope><references>urn:oid:2.49.0.0.578.0,2.49.0.1.578.0.20261128090000.007,2026-11-28T09:00:00+01:00</references>
            <info><language>no</language><event>Kraftig snøfokk</event><urgency>Future</urgency><severity>Moderate</severity>
            <certainty>Likely</certainty><area><areaDesc>Finnmarksvidda</areaDesc>
            <geocode><valueName>EMMA_ID</valueName><value>NO021</value></geocode></area></info>
            <info><language>en-GB</language><event>Blowing snow</event><urgency>Future</urgency><severity>Moderate</severity>
            <certainty>Likely</certainty><area><areaDesc>Finnmarksvidda</areaDesc>
            <geocode><valueName>EMMA_ID</valueName><value>NO021</value></geocode></area></info></alert>
            """
        let read = try CAPAlert.read(Array(update.utf8))
        #expect(read.msgType == "Update" && read.references == [.init(sender: "urn:oid:2.49.0.0.578.0", identifier: "2.49.0.1.578.0.20261128090000.007")])
        #expect(read.infos.map(\.language) == ["no", "en-GB"] && read.infos[0].event == "Kraftig snøfokk")
        #expect(read.infos[0].areas[0].shapes.isEmpty && read.infos[0].areas[0].geocodes.first?.value == "NO021", "a geocode-only area has no shape")

        // CAP 1.1 under a prefix, an earthquake's circle, times in Z.
        let quake = """
            <?xml version='1.0' encoding='utf-8'?>
            <!-- a comment before the root -->
            <cap:alert xmlns:cap="urn:oasis:names:tc:emergency:cap:1.1"><cap:identifier>us7000q1</cap:identifier>
            <cap:sender>earthquake@usgs.gov</cap:sender><cap:sent>2026-11-28T03:12:44Z</cap:sent><cap:status>Actual</cap:status>
            <cap:msgType>Cancel</cap:msgType><cap:scope>Public</cap:scope>
            <cap:info><cap:event>Earthquake</cap:event><cap:urgency>Past</cap:urgency><cap:severity>Minor</cap:severity>
            <cap:certainty>Observed</cap:certainty><cap:headline>M 4.1 &#8211; 12 km &#x53;W of Ridgecrest</cap:headline>
            <cap:area><cap:areaDesc>Ridgecrest</cap:areaDesc><cap:circle>35.55,-117.75 25</cap:circle></cap:area></cap:info></cap:alert>
            """
        let cancel = try CAPAlert.read(Array(quake.utf8))
        #expect(cancel.version == .v11 && cancel.msgType == "Cancel" && cancel.sent == Date(timeIntervalSince1970: 1_795_835_564))
        #expect(cancel.infos[0].headline == "M 4.1 \u{2013} 12 km SW of Ridgecrest", "character references read")
        guard case .circle(let center, let radius) = try #require(cancel.infos[0].areas[0].shapes.first) else { Issue.record("no circle"); return }
        #expect(center == Location(lat: 35.55, lon: -117.75) && radius == 25_000)
    }

    @Test(arguments: [
        // The billion laughs: entities defined in a document type, never expanded.
        ("<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;&lol;\">]><alert>&lol2;</alert>", "document type"),
        // An external entity (a file of the server's).
        ("<?xml version=\"1.0\"?><!DOCTYPE alert [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><alert>&x;</alert>", "document type"),
        ("<alert xmlns=\"urn:oasis:names:tc:emergency:cap:1.2\">&x;</alert>", "not defined"),
        ("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><alert/>", "not UTF-8"),
        ("<alert><identifier>1</alert>", "closed by another"),
        ("<alert>", "not closed"),
        ("<alert a=1/>", "not in quotes"),
        ("<x:alert/>", "not declared"),
        ("<alert/><alert/>", "after the root"),
        ("", "no root"),
    ])
    func whatIsNotSafeXMLIsRefused(document: String, reason: String) {
        #expect {
            try XMLReader.parse(Array(document.utf8))
        } throws: { error in
            (error as? XMLReader.Refusal)?.reason.contains(reason) == true
        }
    }

    @Test func limitsHoldAgainstDepthSizeAndPoints() throws {
        let deep = String(repeating: "<a>", count: 40) + String(repeating: "</a>", count: 40)
        #expect(throws: XMLReader.Refusal.self) { try XMLReader.parse(Array(deep.utf8)) }
        var limits = XMLReader.Limits()
        limits.maxBytes = 100
        #expect(throws: XMLReader.Refusal.self) { try XMLReader.parse(Array(String(repeating: " ", count: 101).utf8), limits: limits) }
        // A polygon of 100,000 points: refused whole, not cut.
        let points = (0..<100_000).map { "\(Double($0 % 90) / 10),\(Double($0 % 180) / 10)" }.joined(separator: " ")
        let huge = Self.thunderstorm.replacingOccurrences(of: "38.47,-120.14 38.34,-119.95 38.52,-119.74 38.62,-119.89 38.47,-120.14", with: points)
        limits = XMLReader.Limits()
        limits.maxBytes = 4 << 20
        #expect {
            try CAPAlert.read(Array(huge.utf8), limits: limits)
        } throws: { error in
            (error as? CAPAlert.Refusal)?.reason.contains("more than 10000 points") == true
        }
        // Not CAP at all, and CAP without what it must have.
        #expect(throws: CAPAlert.Refusal.self) { try CAPAlert.read(Array("<feed xmlns=\"http://www.w3.org/2005/Atom\"/>".utf8)) }
        let noSender = Self.thunderstorm.replacingOccurrences(of: "<sender>w-nws.webmaster@noaa.gov</sender>", with: "")
        #expect { try CAPAlert.read(Array(noSender.utf8)) } throws: { ($0 as? CAPAlert.Refusal)?.reason == "the alert has no sender" }
        let badTime = Self.thunderstorm.replacingOccurrences(of: "2026-11-28T14:57:00-08:00", with: "yesterday")
        #expect(throws: CAPAlert.Refusal.self) { try CAPAlert.read(Array(badTime.utf8)) }
    }

    @Test func namespacesAttributesAndCommentsAreReadAsXMLSays() throws {
        let document = """
            <feed xmlns="http://www.w3.org/2005/Atom" xmlns:georss="http://www.georss.org/georss"><!-- c -->
            <entry><id>a&amp;b</id><link href="https://alerts.example/1?x=1&amp;y=2" rel='alternate'/>
            <georss:polygon>1 2 3 4</georss:polygon><content type="text/xml"><alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"/></content></entry></feed>
            """
        let feed = try XMLReader.parse(Array(document.utf8))
        let atom = "http://www.w3.org/2005/Atom"
        let entry = try #require(feed.child("entry", in: atom))
        #expect(feed.name == "feed" && feed.namespace == atom && entry.child("id", in: atom)?.text == "a&b")
        #expect(entry.child("link", in: atom)?.attributes == ["href": "https://alerts.example/1?x=1&y=2", "rel": "alternate"])
        #expect(entry.child("polygon", in: "http://www.georss.org/georss")?.text == "1 2 3 4")
        #expect(entry.child("content", in: atom)?.child("alert", in: CAPAlert.Version.v12.rawValue) != nil, "a default namespace redeclared inside")
    }
}
