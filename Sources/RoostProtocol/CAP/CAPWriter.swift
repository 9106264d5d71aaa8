import Foundation

/// One CAP 1.2 message Roost publishes about a group's alert (issue #60, "CAP out"): what
/// `CAPWriter` writes, element for element in the order OASIS's schema wants.
public struct CAPMessage: Sendable {
    public struct Info: Equatable, Sendable {
        public var language: String
        /// CAP's categories: Security for a watch group's alerts.
        public var category: String
        public var event: String
        public var urgency: String
        public var severity: String
        public var certainty: String
        public var senderName: String
        public var headline: String
        public var description: String
        public var web: String?
        public var areaDescription: String
        /// Where: circles (`lat,lon km`) or polygons (`lat,lon lat,lon ...`), as CAP writes them.
        public var circles: [String]
        public var polygons: [String]

        public init(language: String, category: String, event: String, urgency: String, severity: String, certainty: String,
                    senderName: String, headline: String, description: String, web: String?, areaDescription: String,
                    circles: [String], polygons: [String]) {
            (self.language, self.category, self.event, self.urgency, self.severity, self.certainty) = (language, category, event, urgency, severity, certainty)
            (self.senderName, self.headline, self.description, self.web) = (senderName, headline, description, web)
            (self.areaDescription, self.circles, self.polygons) = (areaDescription, circles, polygons)
        }
    }

    public var identifier: String
    public var sender: String
    public var sent: Date
    /// Actual or Exercise.
    public var status: String
    /// Alert, Update or Cancel.
    public var msgType: String
    public var restriction: String
    public var note: String?
    /// `sender,identifier,sent` of the messages this one follows.
    public var references: [(sender: String, identifier: String, sent: Date)]
    public var info: Info

    public init(identifier: String, sender: String, sent: Date, status: String, msgType: String, restriction: String, note: String?,
                references: [(sender: String, identifier: String, sent: Date)], info: Info) {
        (self.identifier, self.sender, self.sent, self.status, self.msgType) = (identifier, sender, sent, status, msgType)
        (self.restriction, self.note, self.references, self.info) = (restriction, note, references, info)
    }
}

/// Writes CAP 1.2 documents and the Atom feed that carries them. Pure; every text escaped, and
/// characters XML 1.0 cannot carry left out.
public enum CAPWriter {
    public static let namespace = CAPAlert.Version.v12.rawValue

    /// The message as a document (with the XML declaration), or as an element to embed.
    public static func alert(_ message: CAPMessage, declaration: Bool = true) -> String {
        var out = declaration ? "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" : ""
        out += "<alert xmlns=\"\(namespace)\">"
        out += element("identifier", message.identifier) + element("sender", message.sender) + element("sent", CAPTime.text(message.sent))
        out += element("status", message.status) + element("msgType", message.msgType) + element("scope", "Restricted")
        out += element("restriction", message.restriction)
        if let note = message.note { out += element("note", note) }
        if !message.references.isEmpty {
            out += element("references", message.references.map { "\($0.sender),\($0.identifier),\(CAPTime.text($0.sent))" }.joined(separator: " "))
        }
        let info = message.info
        out += "<info>" + element("language", info.language) + element("category", info.category) + element("event", info.event)
        out += element("urgency", info.urgency) + element("severity", info.severity) + element("certainty", info.certainty)
        out += element("senderName", info.senderName) + element("headline", info.headline) + element("description", info.description)
        if let web = info.web { out += element("web", web) }
        if !info.polygons.isEmpty || !info.circles.isEmpty {
            out += "<area>" + element("areaDesc", info.areaDescription)
            for polygon in info.polygons { out += element("polygon", polygon) }
            for circle in info.circles { out += element("circle", circle) }
            out += "</area>"
        }
        out += "</info></alert>"
        return out
    }

    /// One entry of a feed: its id, title, time, the link to its CAP document, and the document.
    public struct Entry: Sendable {
        public let message: CAPMessage
        public let link: String

        public init(message: CAPMessage, link: String) {
            self.message = message
            self.link = link
        }
    }

    /// An Atom feed (RFC 4287) of CAP messages, newest first, each entry carrying its document.
    public static func atom(id: String, title: String, author: String, selfLink: String, updated: Date, entries: [Entry]) -> String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">"
        out += element("id", id) + element("title", title) + element("updated", atomTime(updated))
        out += "<author>" + element("name", author) + "</author>"
        out += "<link rel=\"self\" href=\"\(escape(selfLink))\"/>"
        for entry in entries {
            let message = entry.message
            out += "<entry>" + element("id", message.identifier) + element("title", "\(message.msgType): \(message.info.headline)")
            out += element("updated", atomTime(message.sent))
            out += "<link rel=\"alternate\" type=\"application/cap+xml\" href=\"\(escape(entry.link))\"/>"
            out += "<content type=\"text/xml\">" + alert(message, declaration: false) + "</content></entry>"
        }
        return out + "</feed>"
    }

    /// RFC 3339 in UTC, as Atom's dates are.
    static func atomTime(_ date: Date) -> String {
        String(CAPTime.text(date).dropLast(6)) + "Z"
    }

    static func element(_ name: String, _ text: String) -> String {
        "<\(name)>\(escape(text))</\(name)>"
    }

    /// `text` with `& < > " '` escaped and what XML 1.0 cannot carry (C0 controls but tab,
    /// newline and return; U+FFFE, U+FFFF) left out.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF { continue }
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
