import Foundation

/// What a warning publisher's feed lists (issue #60): an Atom feed or an RSS 2.0 channel whose
/// entries each carry a CAP alert inside them or point to one, or a CAP alert served alone.
/// Pure: the poller fetches what an entry points to and reads it with `CAPAlert.read`.
public struct CAPFeed: Equatable, Sendable {
    public struct Entry: Equatable, Sendable {
        /// The entry's `id` (Atom), `guid` (RSS), or the alert's sender and identifier.
        public let key: String
        /// When the publisher says the entry last changed (`updated`, `pubDate`): an entry seen
        /// before with the same value is not fetched again.
        public let updated: String
        public let content: Content
    }

    public enum Content: Equatable, Sendable {
        /// The alert, inside the entry (or the whole document).
        case alert(CAPAlert)
        /// Where the alert is: an absolute http(s) URL.
        case link(String)
        /// The entry's CAP alert is there but is not one Roost takes, or the entry has none.
        case refused(String)
    }

    public let entries: [Entry]

    /// The most entries a feed may list; past them the feed is refused, not cut.
    public static let maxEntries = 500

    static let atom = "http://www.w3.org/2005/Atom"

    /// Reads a feed (or a lone CAP alert) from a document's bytes.
    public static func read(_ bytes: [UInt8], limits: XMLReader.Limits = XMLReader.Limits()) throws(CAPAlert.Refusal) -> CAPFeed {
        let root: XMLElement
        do {
            root = try XMLReader.parse(bytes, limits: limits)
        } catch {
            throw CAPAlert.Refusal(reason: "not XML Roost reads: \(error)")
        }
        return try read(root)
    }

    public static func read(_ root: XMLElement) throws(CAPAlert.Refusal) -> CAPFeed {
        let entries: [Entry]
        switch (root.namespace, root.name) {
        case (atom, "feed"):
            let elements = root.children("entry", in: atom)
            guard elements.count <= maxEntries else { throw CAPAlert.Refusal(reason: "a feed of more than \(maxEntries) entries") }
            entries = elements.map(atomEntry)
        case (nil, "rss"):
            guard let channel = root.child("channel", in: nil) else { throw CAPAlert.Refusal(reason: "an RSS document without a channel") }
            let items = channel.children("item", in: nil)
            guard items.count <= maxEntries else { throw CAPAlert.Refusal(reason: "a feed of more than \(maxEntries) entries") }
            entries = items.map(rssItem)
        case (let namespace?, "alert") where CAPAlert.Version(rawValue: namespace) != nil:
            let alert = try CAPAlert.read(root)
            entries = [Entry(key: "\(alert.sender),\(alert.identifier)", updated: CAPTime.text(alert.sent), content: .alert(alert))]
        default:
            throw CAPAlert.Refusal(reason: "neither an Atom feed, an RSS channel nor a CAP alert (the root is \(root.namespace ?? "")|\(root.name))")
        }
        return CAPFeed(entries: entries)
    }

    private static func atomEntry(_ entry: XMLElement) -> Entry {
        let key = entry.child("id", in: atom)?.text.trimmed.nonEmpty
        let updated = (entry.child("updated", in: atom) ?? entry.child("published", in: atom))?.text.trimmed ?? ""
        if let alert = embeddedAlert(in: entry) {
            return Entry(key: key ?? alertKey(alert), updated: updated, content: content(of: alert))
        }
        let links = entry.children("link", in: atom)
        // The CAP document by its media type; else the entry's page (publishers serve CAP there).
        let chosen = links.first { $0.attributes["type"]?.lowercased().hasPrefix("application/cap+xml") == true }
            ?? links.first { ($0.attributes["rel"] ?? "alternate") == "alternate" }
        let content = chosen?.attributes["href"].flatMap(absoluteLink).map(Content.link) ?? .refused("the entry has no CAP alert and no link to one")
        return Entry(key: key ?? chosen?.attributes["href"] ?? "", updated: updated, content: content)
    }

    private static func rssItem(_ item: XMLElement) -> Entry {
        let link = item.child("link", in: nil)?.text.trimmed.nonEmpty
        let key = item.child("guid", in: nil)?.text.trimmed.nonEmpty ?? link ?? ""
        let updated = item.child("pubDate", in: nil)?.text.trimmed ?? ""
        if let alert = embeddedAlert(in: item) {
            return Entry(key: key.isEmpty ? alertKey(alert) : key, updated: updated, content: content(of: alert))
        }
        let enclosure = item.children("enclosure", in: nil).first { $0.attributes["type"]?.lowercased().hasPrefix("application/cap+xml") == true }
        let target = enclosure?.attributes["url"] ?? link
        let content = target.flatMap(absoluteLink).map(Content.link) ?? .refused("the item has no CAP alert and no link to one")
        return Entry(key: key, updated: updated, content: content)
    }

    /// A CAP alert carried in the entry: a child, or inside its `content`.
    private static func embeddedAlert(in entry: XMLElement) -> Result<CAPAlert, CAPAlert.Refusal>? {
        let candidates = entry.children + (entry.child("content", in: atom)?.children ?? [])
        guard let element = candidates.first(where: { $0.name == "alert" && $0.namespace.flatMap(CAPAlert.Version.init(rawValue:)) != nil }) else {
            return nil
        }
        return Result { () throws(CAPAlert.Refusal) in try CAPAlert.read(element) }
    }

    private static func alertKey(_ result: Result<CAPAlert, CAPAlert.Refusal>) -> String {
        (try? result.get()).map { "\($0.sender),\($0.identifier)" } ?? ""
    }

    private static func content(of result: Result<CAPAlert, CAPAlert.Refusal>) -> Content {
        switch result {
        case .success(let alert): .alert(alert)
        case .failure(let refusal): .refused(refusal.reason)
        }
    }

    /// An http or https URL as written, or nil (a relative or other link is not followed).
    private static func absoluteLink(_ text: String) -> String? {
        let trimmed = text.trimmed
        let lower = trimmed.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://"), trimmed.utf8.count <= 2048 else { return nil }
        return trimmed
    }
}
