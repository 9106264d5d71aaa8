import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Synchronization
import Testing

/// Official warnings end to end (issue #60): a publisher's web server (scripts/lib/feed_server.py,
/// Python's http.server with ETags) serves an Atom feed of CAP documents shaped as real
/// publishers write them; the poller takes it for the operator's feed, and the groups whose
/// area the warnings meet get one alert each, updated and closed as the feed says.
@Suite(.enabled(if: TestDatabase.isConfigured && SpecTool.python != nil, "needs TEST_DATABASE_URL and python3 (scripts/test sets both)"))
struct FeedPollTests {
    static let operatorToken = "feed-poll-operator-token-0123456789abcdef"
    /// Oak Lane's streets in Copenhagen, and a village 200 km away.
    nonisolated(unsafe) static let town: [String: Any] = ["polygon": [[12.560, 55.670], [12.580, 55.670], [12.580, 55.685], [12.560, 55.685]]]
    nonisolated(unsafe) static let village: [String: Any] = ["circle": ["lat": 56.9, "lon": 9.9, "radius_m": 2000]]
    /// CAP polygons are `lat,lon` pairs: one round the town, one over the sea.
    static let overTown = "55.66,12.55 55.66,12.59 55.69,12.59 55.69,12.55 55.66,12.55"

    struct Stage {
        let api: APIFixture
        let server: ScriptService
        let owner: APIFixture.Person
        let feed: String
        /// In the town, in the village, and in the town in drill mode.
        let town: String
        let village: String
        let drill: String
        var directory: URL { server.directory }
        var port: Int { server.ready["port"] as! Int }

        func write(_ name: String, _ text: String) throws {
            try Data(text.utf8).write(to: directory.appendingPathComponent(name))
        }

        /// The feed lists these documents, newest first as publishers do.
        func list(_ entries: [(id: String, updated: String, file: String)]) throws {
            try write("feed.atom", FeedPollTests.atom(entries.map { ($0.id, $0.updated, "http://127.0.0.1:\(port)/\($0.file)") }))
        }

        func alerts(_ group: String) async throws -> [[String: Any]] {
            let (_, page) = try await api.call("GET", "/v1/groups/\(group)/alerts", token: owner.token)
            return page["items"] as? [[String: Any]] ?? []
        }

        func lastSeq(_ group: String) async throws -> Int {
            try await api.call("GET", "/v1/groups/\(group)", token: owner.token).1["last_seq"] as? Int ?? -1
        }

        func poller(now: Date = Date(), log: Log = Log(level: .error)) -> FeedPoller {
            var network = OutboundNetwork()
            network.policy = OutboundPolicy(allowedNetworks: [IPNetwork("127.0.0.0/8")!])
            var options = FeedPoller.Options()
            options.fetchSeconds = 60
            return FeedPoller(pool: api.pool, network: network, tls: nil, options: options, log: log, now: { now })
        }

        func pollNow() async throws {
            #expect(try await api.call("POST", "/v1/admin/feeds/\(feed)/poll", token: FeedPollTests.operatorToken).0 == 202)
        }

        func requests(_ path: String) -> [[String: Any]] { server.lines.filter { $0["path"] as? String == path } }

        func lastStatus() async throws -> String {
            try await api.call("GET", "/v1/admin/feeds/\(feed)", token: FeedPollTests.operatorToken).1["last_status"] as? String ?? ""
        }
    }

    /// On a database of its own: feeds are the deployment's, and a poller takes any that is due.
    static func stage(_ database: String) async throws -> Stage {
        let api = try APIFixture(stream: true, database: database, adminToken: operatorToken)
        let server = try await ScriptService("feed_server.py", readyKey: "port")
        let owner = try await api.person(email: "feeds-owner-\(UUID().uuidString.prefix(6).lowercased())@example.org")
        func group(_ name: String, _ area: [String: Any], drill: Bool = false) async throws -> String {
            let id = try #require(try await api.call("POST", "/v1/groups", ["name": name], token: owner.token).1["id"] as? String)
            #expect(try await api.call("PUT", "/v1/groups/\(id)/area", area, token: owner.token).0 == 200)
            let (status, view) = try await api.call("PATCH", "/v1/groups/\(id)", ["feeds": ["enabled": true, "min_severity": "info"], "drill": drill],
                                                    token: owner.token)
            #expect(status == 200 && (view["feeds"] as? [String: Any])?["enabled"] as? Bool == true && view["drill"] as? Bool == drill, "\(view)")
            return id
        }
        let town = try await group("Oak Lane", Self.town)
        let village = try await group("Hill Farm", Self.village)
        let drill = try await group("Oak Lane drills", Self.town, drill: true)
        let port = server.ready["port"] as! Int
        let (status, added) = try await api.call("POST", "/v1/admin/feeds", ["url": "http://127.0.0.1:\(port)/feed.atom", "name": "Civil protection",
                                                                              "tenants": [api.tenant], "poll_s": 600], token: operatorToken)
        #expect(status == 201, "\(added)")
        return Stage(api: api, server: server, owner: owner, feed: try #require(added["id"] as? String), town: town, village: village, drill: drill)
    }

    @Test func warningsReachTheGroupsTheyCoverOnceAndAreUpdatedCancelledAndExpiredAsTheFeedSays() async throws {
        let database = try TestDatabase.makeScratch()
        defer { TestDatabase.dropScratch(database) }
        let stage = try await Self.stage(database)
        let member = try await stage.api.person(email: "feeds-member-\(UUID().uuidString.prefix(6).lowercased())@example.org")
        try await stage.api.addMember(member.id, to: stage.town, role: "member")
        let stream = try await WebSocketTestClient.connect(port: stage.api.test.port, path: "/v1/stream", token: member.token)
        #expect(await stream.receiveJSON()?["type"] as? String == "ready")
        stream.sendText(#"{"type":"resume","cursors":{}}"#)
        #expect(await stream.receiveJSON()?["type"] as? String == "resumed")
        let now = Date()
        func soon(_ hours: Double) -> String { CAPTime.text(now.addingTimeInterval(hours * 3600)) }

        try stage.write("flood-1.xml", Self.cap(identifier: "flood-1", sent: soon(-1), severity: "Severe", headline: "Flood warning for the harbour",
                                               polygon: Self.overTown, expires: soon(6)))
        try stage.write("drill.xml", Self.cap(identifier: "drill-1", sent: soon(-1), status: "Exercise", severity: "Extreme",
                                             headline: "Exercise: chemical plume", polygon: Self.overTown, expires: soon(6)))
        try stage.write("old.xml", Self.cap(identifier: "old-1", sent: soon(-30), severity: "Severe", headline: "Yesterday's storm",
                                           polygon: Self.overTown, expires: soon(-20)))
        try stage.write("codes.xml", Self.cap(identifier: "codes-1", sent: soon(-1), severity: "Severe", headline: "Only a geocode",
                                             polygon: nil, expires: soon(6)))
        try stage.write("wind.xml", Self.cap(version: "1.1", identifier: "wind-1", sent: soon(-1), severity: "Moderate",
                                            headline: "Strong wind", circle: "55.675,12.57 3", expires: soon(3)))
        try stage.write("test.xml", Self.cap(identifier: "test-1", sent: soon(-1), status: "Test", severity: "Minor", headline: "Test message",
                                            polygon: Self.overTown, expires: soon(6)))
        try stage.list([("urn:flood-1", "1", "flood-1.xml"), ("urn:drill-1", "1", "drill.xml"), ("urn:old-1", "1", "old.xml"),
                        ("urn:codes-1", "1", "codes.xml"), ("urn:wind-1", "1", "wind.xml"), ("urn:test-1", "1", "test.xml")])
        let polling = ContinuousClock.now
        #expect(try await stage.poller(now: now).runOnce() == 1)
        #expect(try await stage.lastStatus() == "ok: 6 entries, 6 read, 0 refused; 6 raised, 0 updated, 0 closed")

        let town = try await stage.alerts(stage.town)
        #expect(Set(town.compactMap { $0["text"] as? String }.map { $0.components(separatedBy: "\n").first! })
                    == ["Flood warning for the harbour", "Strong wind"], "\(town)")
        let flood = try #require(town.first { ($0["text"] as? String)?.hasPrefix("Flood") == true })
        #expect((flood["alert"] as? [String: Any])?["severity"] as? String == "red")
        #expect((flood["author"] as? [String: Any])?["type"] as? String == "feed")
        #expect((flood["author"] as? [String: Any])?["display_name"] as? String == "Civil protection")
        let cap = try #require(((flood["alert"] as? [String: Any])?["details"] as? [String: Any])?["cap"] as? [String: Any])
        #expect(cap["identifier"] as? String == "flood-1" && cap["sender"] as? String == "warnings@civil.example" && cap["url"] as? String == "https://civil.example/flood-1",
                "\(cap)")
        #expect(cap["sender_name"] as? String == "Civil Protection Agency" && cap["urgency"] as? String == "Expected")
        let wind = try #require(town.first { ($0["text"] as? String)?.hasPrefix("Strong") == true })
        #expect((wind["alert"] as? [String: Any])?["severity"] as? String == "amber", "CAP 1.1, Moderate")
        #expect(try await stage.alerts(stage.village).isEmpty, "the village is outside every warning's area")
        let drill = try await stage.alerts(stage.drill)
        #expect(Set(drill.compactMap { ($0["text"] as? String)?.components(separatedBy: "\n").first })
                    == ["Flood warning for the harbour", "Strong wind", "EXERCISE: Exercise: chemical plume", "TEST: Test message"], "\(drill)")
        let raised = try #require(await DC09ReceiverTests.nextEvent(stream))
        #expect(raised["event"] as? String == "message.created")
        // A figure, not a budget: Roost's own part of a warning's way (the fetches of a feed and six
        // documents, applying them, the stream); the wait for the next poll comes on top.
        let took = ContinuousClock.now - polling
        print("feeds: the first warning of a changed feed reached a member's stream \(took.components.seconds * 1000 + took.components.attoseconds / 1_000_000_000_000_000) ms "
              + "after its poll began; at a 120 s interval the wait for the poll (up to 120 s) dominates")

        // Polled again unchanged: a conditional GET, a 304, nothing written.
        let before = try await stage.lastSeq(stage.town)
        try await stage.pollNow()
        #expect(try await stage.poller(now: now).runOnce() == 1)
        let second = try #require(stage.requests("/feed.atom").last)
        #expect(second["if_none_match"] is String && second["status"] as? Int == 304, "\(second)")
        #expect(try await stage.lastStatus() == "not modified")
        #expect(try await stage.lastSeq(stage.town) == before)

        // The publisher updates the flood warning (a new identifier naming the first): the same
        // alert, changed in place, and an alert.updated event; then cancels it.
        try stage.write("flood-2.xml", Self.cap(identifier: "flood-2", sent: soon(-0.5), msgType: "Update", references: "flood-1", severity: "Extreme",
                                               headline: "Severe flooding: leave the harbour", polygon: Self.overTown, expires: soon(8)))
        try stage.list([("urn:flood-2", "2", "flood-2.xml"), ("urn:flood-1", "1", "flood-1.xml"), ("urn:wind-1", "1", "wind.xml")])
        try await stage.pollNow()
        #expect(try await stage.poller(now: now).runOnce() == 1)
        #expect(try await stage.lastStatus() == "ok: 3 entries, 1 read, 0 refused; 0 raised, 2 updated, 0 closed", "the town's and the drill group's")
        var updated: [String: Any] = [:]
        while let event = await DC09ReceiverTests.nextEvent(stream) {
            if event["event"] as? String == "alert.updated" {
                updated = event
                break
            }
        }
        let data = try #require(updated["data"] as? [String: Any])
        #expect(data["seq"] as? Int == flood["seq"] as? Int && (data["text"] as? String)?.hasPrefix("Severe flooding") == true, "\(updated)")
        let afterUpdate = try await stage.alerts(stage.town)
        #expect(afterUpdate.count == 2, "still one alert for the flood")
        try stage.write("flood-3.xml", Self.cap(identifier: "flood-3", sent: soon(-0.2), msgType: "Cancel", references: "flood-2", severity: "Extreme",
                                               headline: "The water has receded", polygon: Self.overTown, expires: soon(8)))
        try stage.list([("urn:flood-3", "3", "flood-3.xml"), ("urn:flood-2", "2", "flood-2.xml"), ("urn:wind-1", "1", "wind.xml")])
        try await stage.pollNow()
        #expect(try await stage.poller(now: now).runOnce() == 1)
        let cancelled = try #require(try await stage.alerts(stage.town).first { $0["seq"] as? Int == flood["seq"] as? Int })
        let closed = try #require(cancelled["alert"] as? [String: Any])
        #expect(closed["status"] as? String == "closed" && closed["resolution"] as? String == "Cancelled by its publisher: The water has receded", "\(closed)")
        #expect((closed["closed_by"] as? [String: Any])?["display_name"] as? String == "Civil protection")

        // The warnings' expiry, their time moved by hand as the job tests do: closed by the feed.
        try await stage.api.inTenant { _, connection in try connection.query("UPDATE cap_expiries SET due_at = now()") }
        let tenantID = try await stage.api.inTenant { tenant, _ in tenant }
        #expect(try await FeedExpiries(pool: stage.api.pool, runner: JobRunner(metrics: JobMetrics(), log: Log(level: .error))).runOnce(tenant: tenantID) == 4,
                "the wind in both groups, the drill group's exercise and test; the flood's closed already")
        let expired = try #require(try await stage.alerts(stage.town).first { $0["seq"] as? Int == wind["seq"] as? Int })
        #expect((expired["alert"] as? [String: Any])?["resolution"] as? String == "The warning expired")
        await stage.server.stop()
        await stage.api.stop()
    }

    @Test func twoNodesPollAFeedOnceBetweenThem() async throws {
        let database = try TestDatabase.makeScratch()
        defer { TestDatabase.dropScratch(database) }
        let stage = try await Self.stage(database)
        try stage.write("flood-1.xml", Self.cap(identifier: "race-1", sent: CAPTime.text(Date()), severity: "Severe", headline: "Flood",
                                               polygon: Self.overTown, expires: CAPTime.text(Date().addingTimeInterval(3600))))
        try stage.list([("urn:race-1", "1", "flood-1.xml")])
        let (first, second) = (stage.poller(), stage.poller())
        async let a = first.runOnce()
        async let b = second.runOnce()
        let polled = try await [a, b]
        #expect(polled.sorted() == [0, 1], "\(polled)")
        #expect(stage.requests("/feed.atom").count == 1 && stage.requests("/flood-1.xml").count == 1)
        #expect(try await stage.alerts(stage.town).count == 1)
        #expect(try await stage.alerts(stage.drill).count == 1)
        await stage.server.stop()
        await stage.api.stop()
    }

    /// A document the publisher's server could not give this time (a 404 while it is being
    /// written) is asked for again at the next poll, which reads the feed whole: a conditional
    /// GET's 304 would never list the entry again.
    @Test func aDocumentNotReachedIsFetchedAtTheNextPollWhichReadsTheFeedWhole() async throws {
        let database = try TestDatabase.makeScratch()
        defer { TestDatabase.dropScratch(database) }
        let stage = try await Self.stage(database)
        try stage.list([("urn:late-1", "1", "late.xml")])
        #expect(try await stage.poller().runOnce() == 1)
        #expect(try await stage.lastStatus() == "ok: 1 entries, 0 read, 0 refused, 1 left for the next poll; 0 raised, 0 updated, 0 closed")
        try stage.write("late.xml", Self.cap(identifier: "late-1", sent: CAPTime.text(Date()), severity: "Severe", headline: "Late flood",
                                            polygon: Self.overTown, expires: CAPTime.text(Date().addingTimeInterval(3600))))
        try await stage.pollNow()
        #expect(try await stage.poller().runOnce() == 1)
        let again = try #require(stage.requests("/feed.atom").last)
        #expect(again["if_none_match"] is NSNull && again["status"] as? Int == 200, "\(again)")
        #expect(try await stage.lastStatus() == "ok: 1 entries, 1 read, 0 refused; 2 raised, 0 updated, 0 closed")
        #expect(stage.requests("/late.xml").map { $0["status"] as? Int } == [404, 200])
        await stage.server.stop()
        await stage.api.stop()
    }

    @Test func whatNoPublisherShouldSendIsRefusedWithNothingWritten() async throws {
        let database = try TestDatabase.makeScratch()
        defer { TestDatabase.dropScratch(database) }
        let stage = try await Self.stage(database)
        let fine = Self.cap(identifier: "x", sent: CAPTime.text(Date()), severity: "Severe", headline: "Flood", polygon: Self.overTown,
                            expires: CAPTime.text(Date().addingTimeInterval(3600)))
        try stage.write("broken.xml", String(fine.dropLast(40)))
        try stage.write("laughs.xml", """
            <?xml version="1.0"?>
            <!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
            <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>&lol2;</identifier></alert>
            """)
        try stage.write("external.xml", """
            <?xml version="1.0"?>
            <!DOCTYPE alert [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
            <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>&secret;</identifier></alert>
            """)
        let points = (0...100_000).map { index -> String in
            let angle = Double(index) / 100_000 * 2 * .pi
            return "\(55.675 + 0.01 * sin(angle)),\(12.57 + 0.01 * cos(angle))"
        }
        try stage.write("points.xml", Self.cap(identifier: "points", sent: CAPTime.text(Date()), severity: "Severe", headline: "Huge",
                                              polygon: points.joined(separator: " "), expires: CAPTime.text(Date().addingTimeInterval(3600))))
        let port = stage.port
        try stage.write("feed.atom", Self.atom([("urn:broken", "1", "http://127.0.0.1:\(port)/broken.xml"),
                                                ("urn:laughs", "1", "http://127.0.0.1:\(port)/laughs.xml"),
                                                ("urn:external", "1", "http://127.0.0.1:\(port)/external.xml"),
                                                ("urn:points", "1", "http://127.0.0.1:\(port)/points.xml"),
                                                ("urn:huge", "1", "http://127.0.0.1:\(port)/huge"),
                                                // A publisher pointing Roost at an internal address: the policy refuses it.
                                                ("urn:inside", "1", "http://10.11.12.13/metadata")]))
        let before = (try await stage.lastSeq(stage.town), try await stage.lastSeq(stage.drill))
        let logged = Mutex<[String]>([])
        #expect(try await stage.poller(log: Log(level: .warning) { line in logged.withLock { $0.append(line) } }).runOnce() == 1)
        let refusals = logged.withLock { $0 }.filter { $0.contains("refused") }
        #expect(refusals.count == 6, "a log line for each: \(refusals)")
        #expect(refusals.contains { $0.contains("a document type declaration") } && refusals.contains { $0.contains("refused by the outbound policy") }
                && refusals.contains { $0.contains("over 1048576") }, "\(refusals)")
        let status = try await stage.lastStatus()
        #expect(status == "ok: 6 entries, 0 read, 6 refused; 0 raised, 0 updated, 0 closed", "\(status)")
        #expect(try await (stage.lastSeq(stage.town), stage.lastSeq(stage.drill)) == before)
        #expect(stage.requests("/huge").count == 1)

        // A feed that is itself no feed: refused as a whole.
        try stage.write("feed.atom", try String(contentsOf: stage.directory.appendingPathComponent("laughs.xml"), encoding: .utf8))
        try await stage.pollNow()
        #expect(try await stage.poller().runOnce() == 1)
        #expect(try await stage.lastStatus().hasPrefix("refused: not XML Roost reads: a document type declaration"))
        await stage.server.stop()
        await stage.api.stop()
    }

    @Test func theOperatorsFeedsAreCheckedListedAndRemoved() async throws {
        let api = try APIFixture(adminToken: Self.operatorToken)
        func add(_ body: [String: Any]) async throws -> (Int, [String: Any]) {
            try await api.call("POST", "/v1/admin/feeds", body, token: Self.operatorToken)
        }
        let url = "https://warnings.example/\(UUID().uuidString).atom"
        #expect(try await add(["url": url, "tenants": "all", "poll_s": 5]).1.errorField == "poll_s")
        #expect(try await add(["url": "ftp://warnings.example/feed", "tenants": "all"]).1.errorField == "url")
        #expect(try await add(["url": url, "tenants": ["no-such-town"]]).1.errorField == "tenants")
        #expect(try await add(["url": url, "tenants": []]).0 == 400)
        #expect(try await api.call("POST", "/v1/admin/feeds", ["url": url, "tenants": "all"], token: "wrong").0 == 401)
        let (created, feed) = try await add(["url": url, "tenants": [api.tenant], "sender": "warnings@civil.example"])
        #expect(created == 201 && feed["poll_s"] as? Int == 300 && feed["tenants"] as? [String] == [api.tenant] && feed["name"] as? String == "warnings.example",
                "\(feed)")
        #expect(try await add(["url": url, "tenants": "all"]).0 == 409)
        let id = try #require(feed["id"] as? String)
        let (_, list) = try await api.call("GET", "/v1/admin/feeds", token: Self.operatorToken)
        #expect((list["items"] as? [[String: Any]])?.contains { $0["id"] as? String == id } == true)
        #expect(try await api.call("DELETE", "/v1/admin/feeds/\(id)", token: Self.operatorToken).0 == 204)
        #expect(try await api.call("GET", "/v1/admin/feeds/\(id)", token: Self.operatorToken).0 == 404)
        #expect(try await api.call("POST", "/v1/admin/feeds/\(id)/poll", token: Self.operatorToken).0 == 404)
        await api.stop()
    }

    // MARK: - Documents as publishers write them

    static func atom(_ entries: [(id: String, updated: String, href: String)]) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <feed xmlns="http://www.w3.org/2005/Atom">
          <id>urn:civil.example:feed</id><title>Civil protection warnings</title><updated>2026-11-28T09:00:00Z</updated>
        \(entries.map { """
          <entry><id>\($0.id)</id><title>Warning</title><updated>2026-11-28T09:00:0\($0.updated)Z</updated>
            <link rel="alternate" type="text/html" href="https://civil.example/"/>
            <link rel="related" type="application/cap+xml" href="\($0.href)"/></entry>
        """ }.joined(separator: "\n"))
        </feed>
        """
    }

    static func cap(version: String = "1.2", identifier: String, sent: String, status: String = "Actual", msgType: String = "Alert",
                    references: String? = nil, severity: String, headline: String, polygon: String? = nil, circle: String? = nil,
                    expires: String) -> String {
        let shape = polygon.map { "<polygon>\($0)</polygon>" } ?? circle.map { "<circle>\($0)</circle>" } ?? ""
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <alert xmlns="urn:oasis:names:tc:emergency:cap:\(version)">
              <identifier>\(identifier)</identifier>
              <sender>warnings@civil.example</sender>
              <sent>\(sent)</sent>
              <status>\(status)</status>
              <msgType>\(msgType)</msgType>
              <scope>Public</scope>
              \(references.map { "<references>warnings@civil.example,\($0),\(sent)</references>" } ?? "")
              <info>
                <language>en-GB</language>
                <category>Met</category>
                <event>Flood</event>
                <urgency>Expected</urgency>
                <severity>\(severity)</severity>
                <certainty>Likely</certainty>
                <expires>\(expires)</expires>
                <senderName>Civil Protection Agency</senderName>
                <headline>\(headline)</headline>
                <description>Water levels are rising along the harbour front.</description>
                <instruction>Move valuables upstairs.</instruction>
                <web>https://civil.example/\(identifier)</web>
                <area>
                  <areaDesc>Harbour district</areaDesc>
                  \(shape)
                  <geocode><valueName>EMMA_ID</valueName><value>DK011</value></geocode>
                </area>
              </info>
            </alert>
            """
    }
}

private extension Dictionary where Key == String, Value == Any {
    var errorField: String? { (self["error"] as? [String: Any])?["field"] as? String }
}
