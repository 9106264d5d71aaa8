import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import Testing

/// What one CAP message does to one group (`WarningDecision`), with no database: which groups
/// a warning reaches, and how an Update, a Cancel, an expiry and a drill change what it did.
struct WarningDecisionTests {
    static let now = Date(timeIntervalSince1970: 1_795_838_400)
    static let street = GeoArea.circle(center: Location(lat: 55.675, lon: 12.57), radiusMeters: 500)
    static let group = FeedGroup(id: UUID(), areaJSON: "", minSeverity: "amber", drill: false)

    static func alert(status: String = "Actual", msgType: String = "Alert", severity: String = "Severe",
                      expires: Date? = now.addingTimeInterval(3600), at centre: (Double, Double) = (55.675, 12.57)) throws -> CAPAlert {
        let document = """
            <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>id-2</identifier><sender>met</sender>
            <sent>2026-11-28T04:00:00-00:00</sent><status>\(status)</status><msgType>\(msgType)</msgType><scope>Public</scope>
            <references>met,id-1,2026-11-28T03:00:00-00:00</references>
            <info><event>Storm</event><urgency>Immediate</urgency><severity>\(severity)</severity><certainty>Likely</certainty>
            \(expires.map { "<expires>\(CAPTime.text($0))</expires>" } ?? "")<headline>Storm</headline><description>Wind.</description>
            <web>javascript:alert(1)</web>
            <area><areaDesc>Coast</areaDesc><circle>\(centre.0),\(centre.1) 2</circle></area></info></alert>
            """
        return try CAPAlert.read(Array(document.utf8))
    }

    func decide(_ alert: CAPAlert, group: FeedGroup = Self.group, found: (open: Bool, sameMessage: Bool)? = nil) -> WarningDecision {
        WarningDecision.decide(alert, for: group, area: Self.street, found: found, now: Self.now)
    }

    @Test func aWarningOverTheStreetIsRaisedOnceAndElsewhereNot() throws {
        guard case .raise(let content) = decide(try Self.alert()) else { Issue.record("not raised"); return }
        #expect(content.severity == "red" && content.text == "Storm\n\nWind." && content.location == "{\"lat\":55.675,\"lon\":12.57}")
        #expect(!content.details.contains("javascript"), "a web link that is no http(s) link is left out: \(content.details)")
        #expect(decide(try Self.alert(), found: (open: true, sameMessage: true)) == .nothing, "polled again")
        #expect(decide(try Self.alert(at: (56.5, 10.0))) == .nothing, "another town's storm")
        #expect(decide(try Self.alert(severity: "Minor")) == .nothing, "below the group's least severity")
        #expect(decide(try Self.alert(expires: Self.now.addingTimeInterval(-1))) == .nothing, "expired")
        #expect(decide(try Self.alert(status: "Draft")) == .nothing)
        #expect(decide(try Self.alert(msgType: "Ack")) == .nothing)
    }

    @Test func updatesCancelsAndDrillsChangeWhatTheFirstMessageDid() throws {
        guard case .update(let content) = decide(try Self.alert(msgType: "Update", severity: "Moderate"), found: (open: true, sameMessage: false)) else {
            Issue.record("not updated"); return
        }
        #expect(content.severity == "amber")
        #expect(decide(try Self.alert(msgType: "Update"), found: (open: false, sameMessage: false)) == .nothing, "a closed alert stays closed")
        #expect(decide(try Self.alert(msgType: "Update", at: (56.5, 10.0)), found: (open: true, sameMessage: false))
                    == .close("The warning no longer covers the group's area"))
        #expect(decide(try Self.alert(msgType: "Update", expires: Self.now), found: (open: true, sameMessage: false)) == .close("The warning expired"))
        #expect(decide(try Self.alert(msgType: "Cancel"), found: (open: true, sameMessage: false)) == .close("Cancelled by its publisher: Storm"))
        #expect(decide(try Self.alert(msgType: "Cancel")) == .nothing, "nothing to cancel")
        let drill = FeedGroup(id: UUID(), areaJSON: "", minSeverity: "info", drill: true)
        #expect(decide(try Self.alert(status: "Exercise")) == .nothing, "an exercise reaches drill groups only")
        guard case .raise(let exercise) = decide(try Self.alert(status: "Exercise"), group: drill) else { Issue.record("no drill"); return }
        #expect(exercise.text.hasPrefix("EXERCISE: "))
    }
}
