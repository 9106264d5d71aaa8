import Foundation
import RoostProtocol
import Testing

/// What a publisher's feed lists (issue #60): Atom entries linking their CAP documents or
/// carrying them, RSS items, a lone alert, and what is none of these.
struct CAPFeedTests {
    static let alert = """
        <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>KAR-1</identifier><sender>w@met.example</sender>
        <sent>2026-11-28T09:00:00+01:00</sent><status>Actual</status><msgType>Alert</msgType><scope>Public</scope></alert>
        """

    func read(_ text: String) throws -> CAPFeed { try CAPFeed.read(Array(text.utf8)) }

    @Test func atomEntriesLinkTheirDocumentByItsTypeOrCarryIt() throws {
        let feed = try read("""
            <?xml version="1.0"?>
            <feed xmlns="http://www.w3.org/2005/Atom">
              <entry><id>urn:a</id><updated>2026-11-28T08:00:00Z</updated>
                <link href="https://met.example/page"/><link rel="related" type="application/cap+xml" href="https://met.example/a.xml"/></entry>
              <entry><id>urn:b</id><published>2026-11-28T07:00:00Z</published><link href="https://met.example/b"/></entry>
              <entry><id>urn:c</id><updated>1</updated><content type="text/xml">\(Self.alert)</content></entry>
              <entry><id>urn:d</id><updated>1</updated><link href="/relative.xml"/></entry>
              <entry><id>urn:e</id><updated>1</updated><link href="javascript:alert(1)"/></entry>
            </feed>
            """)
        #expect(feed.entries.map(\.key) == ["urn:a", "urn:b", "urn:c", "urn:d", "urn:e"])
        #expect(feed.entries[0].content == .link("https://met.example/a.xml") && feed.entries[0].updated == "2026-11-28T08:00:00Z")
        #expect(feed.entries[1].content == .link("https://met.example/b") && feed.entries[1].updated == "2026-11-28T07:00:00Z",
                "no CAP type: the alternate link, as publishers serve CAP there")
        guard case .alert(let carried) = feed.entries[2].content else { Issue.record("\(feed.entries[2])"); return }
        #expect(carried.identifier == "KAR-1" && carried.sender == "w@met.example")
        #expect(feed.entries[3].content == .refused("the entry has no CAP alert and no link to one"))
        #expect(feed.entries[4].content == .refused("the entry has no CAP alert and no link to one"))
    }

    @Test func rssItemsTheirEnclosureOrLinkAndALoneAlertIsAFeedOfOne() throws {
        let feed = try read("""
            <rss version="2.0"><channel><title>Warnings</title>
              <item><guid>g1</guid><pubDate>Sat, 28 Nov 2026 09:00:00 GMT</pubDate><link>https://met.example/page/1</link>
                <enclosure url="https://met.example/1.cap" type="application/cap+xml" length="900"/></item>
              <item><link>http://met.example/2.xml</link></item>
            </channel></rss>
            """)
        #expect(feed.entries.map(\.key) == ["g1", "http://met.example/2.xml"])
        #expect(feed.entries.map(\.content) == [.link("https://met.example/1.cap"), .link("http://met.example/2.xml")])
        let lone = try read(Self.alert)
        #expect(lone.entries.map(\.key) == ["w@met.example,KAR-1"] && lone.entries[0].updated == "2026-11-28T08:00:00-00:00")
    }

    @Test func whatIsNoFeedIsRefusedAndABadEntryIsRefusedAlone() throws {
        #expect(throws: CAPAlert.Refusal.self) { try read("<html><body>moved</body></html>") }
        #expect(throws: CAPAlert.Refusal.self) { try read("<rss version=\"2.0\"></rss>") }
        #expect(throws: CAPAlert.Refusal.self) { try read("<!DOCTYPE feed [<!ENTITY a 'b'>]><feed xmlns=\"http://www.w3.org/2005/Atom\"/>") }
        let many = "<feed xmlns=\"http://www.w3.org/2005/Atom\">" + String(repeating: "<entry><id>x</id></entry>", count: CAPFeed.maxEntries + 1) + "</feed>"
        #expect { try read(many) } throws: { ($0 as? CAPAlert.Refusal)?.reason == "a feed of more than 500 entries" }
        let broken = try read("""
            <feed xmlns="http://www.w3.org/2005/Atom"><entry><id>urn:x</id>
            <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>only</identifier></alert></entry></feed>
            """)
        guard case .refused(let reason) = broken.entries.first?.content else { Issue.record("\(broken)"); return }
        #expect(reason == "the alert has no sender")
    }

    @Test func capTimesAreWrittenInUTCWithoutZ() {
        #expect(CAPTime.text(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00-00:00")
        #expect(CAPTime.text(Date(timeIntervalSince1970: 1_795_838_400.9)) == "2026-11-28T04:00:00-00:00")
        let text = CAPTime.text(Date(timeIntervalSince1970: 1_795_867_261))
        #expect(CAPTime.date(text) == Date(timeIntervalSince1970: 1_795_867_261), "\(text) reads back")
    }
}
