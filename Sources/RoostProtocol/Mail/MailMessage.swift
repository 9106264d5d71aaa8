import Foundation

/// An address as `ROOST_SMTP_FROM` gives it: `noreply@example.org` or
/// `Roost <noreply@example.org>`; the display name may be any UTF-8.
public struct MailAddress: Sendable, Equatable {
    public let name: String?
    public let address: String

    /// Nil unless the address is `local@domain` without spaces, angle brackets, CR or LF.
    public init?(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let name: String?, address: String
        if trimmed.hasSuffix(">"), let open = trimmed.lastIndex(of: "<") {
            address = String(trimmed[trimmed.index(after: open)..<trimmed.index(before: trimmed.endIndex)])
            let display = trimmed[..<open].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            name = display.isEmpty ? nil : display
        } else {
            (name, address) = (nil, trimmed)
        }
        guard Self.isPlainAddress(address), !(name ?? "").contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\"" || $0 == "\\" }) else { return nil }
        self.name = name
        self.address = address
    }

    /// `local@domain` with a non-empty local part and a dotted-or-not domain, printable ASCII
    /// only, and nothing SMTP or a header could read as syntax.
    public static func isPlainAddress(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty && text.utf8.count <= 254
            && text.utf8.allSatisfy { $0 > 32 && $0 < 127 && $0 != 60 && $0 != 62 && $0 != 40 && $0 != 41 && $0 != 44 && $0 != 59 && $0 != 34 }
    }

    /// As a header shows it: the name quoted (or RFC 2047-encoded) and the address in brackets.
    public var header: String {
        guard let name else { return address }
        let shown = name.utf8.allSatisfy({ $0 >= 32 && $0 < 127 }) ? "\"\(name)\"" : MailMessage.encodedWords(name)
        return "\(shown) <\(address)>"
    }
}

/// An email as RFC 5322 and MIME (RFC 2045–2047) want it: `multipart/alternative` with a
/// plain-text part and, when given, an HTML one, both UTF-8 in base64 lines of 76; a
/// non-ASCII subject as RFC 2047 encoded words; `Date`, `Message-ID`, `Auto-Submitted`.
/// Every header value is free of CR and LF, so nothing a member typed can add a header.
public struct MailMessage: Sendable {
    public var from: MailAddress
    public var to: String
    public var subject: String
    public var text: String
    public var html: String?
    public var date: Date
    /// Unique per message; the `Message-ID` is `<messageID@from's domain>`.
    public var messageID: String
    /// A boundary for the parts, which must not appear in them (base64 never has `=_`).
    public var boundary: String

    public init(from: MailAddress, to: String, subject: String, text: String, html: String?, date: Date, messageID: String, boundary: String) {
        self.from = from
        self.to = to
        self.subject = subject
        self.text = text
        self.html = html
        self.date = date
        self.messageID = messageID
        self.boundary = boundary
    }

    /// The message, lines ending in CRLF (not yet dot-stuffed).
    public func rendered() -> [UInt8] {
        let domain = from.address.split(separator: "@").last.map(String.init) ?? "localhost"
        let oneLine = subject.replacingOccurrences(of: "\r\n", with: " ").replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
        let encodedSubject = oneLine.utf8.allSatisfy({ $0 >= 32 && $0 < 127 }) && oneLine.utf8.count <= 900 ? oneLine : Self.encodedWords(oneLine)
        var lines = [
            "From: \(from.header)",
            "To: \(to)",
            "Subject: \(encodedSubject)",
            "Date: \(Self.rfc5322Date(date))",
            "Message-ID: <\(messageID)@\(domain)>",
            "Auto-Submitted: auto-generated",
            "MIME-Version: 1.0",
            "Content-Type: multipart/alternative; boundary=\"\(boundary)\"",
            "",
        ]
        for (type, body) in [("text/plain", text), ("text/html", html)] {
            guard let body else { continue }
            lines += ["--\(boundary)", "Content-Type: \(type); charset=utf-8", "Content-Transfer-Encoding: base64", ""]
            lines += Self.base64Lines(Array(Self.crlf(body).utf8))
        }
        lines += ["--\(boundary)--", ""]
        return Array(lines.joined(separator: "\r\n").utf8)
    }

    /// SMTP's DATA form of a message (RFC 5321 §4.5.2): line ends made CRLF, a leading `.`
    /// doubled, and the closing `CRLF.CRLF`.
    public static func dotStuffed(_ message: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(message.count + 64)
        var atLineStart = true
        var previous: UInt8 = 0
        for byte in message {
            if byte == 10, previous != 13 { out.append(13) }
            if atLineStart, byte == 46 { out.append(46) }
            out.append(byte)
            atLineStart = byte == 10
            previous = byte
        }
        if !atLineStart { out += [13, 10] }
        return out + [46, 13, 10]
    }

    /// RFC 2047 "B" encoded words of at most 75 characters each, split between characters
    /// (never inside one), folded onto continuation lines.
    public static func encodedWords(_ text: String) -> String {
        var words: [[UInt8]] = []
        var chunk: [UInt8] = []
        for character in text {
            let bytes = Array(String(character).utf8)
            if chunk.count + bytes.count > 45, !chunk.isEmpty {
                words.append(chunk)
                chunk = []
            }
            chunk += bytes
        }
        if !chunk.isEmpty || words.isEmpty { words.append(chunk) }
        return words.map { "=?UTF-8?B?\(Data($0).base64EncodedString())?=" }.joined(separator: "\r\n ")
    }

    static func base64Lines(_ bytes: [UInt8]) -> [String] {
        let encoded = Data(bytes).base64EncodedString()
        var lines: [String] = []
        var index = encoded.startIndex
        while index < encoded.endIndex {
            let end = encoded.index(index, offsetBy: 76, limitedBy: encoded.endIndex) ?? encoded.endIndex
            lines.append(String(encoded[index..<end]))
            index = end
        }
        return lines
    }

    static func crlf(_ text: String) -> String {
        text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\n", with: "\r\n")
    }

    /// `Mon, 23 Nov 2026 19:41:51 +0000`.
    public static func rfc5322Date(_ date: Date) -> String {
        HTTPDate.format(secondsSince1970: Int64(date.timeIntervalSince1970.rounded(.down)), zone: "+0000")
    }
}
