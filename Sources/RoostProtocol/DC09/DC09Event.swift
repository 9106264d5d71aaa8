/// The events of a DC-09 message's data block: SIA DC-03 event blocks (`#1234|Nri1/BA001`,
/// several a message, with the area `ri`/`pi`, user `id`, time `ti` and date `da` modifiers
/// in between) or Ademco Contact ID (`#1234|1130 01 015`: qualifier, event, area, zone or user).
public struct DC09Event: Equatable, Sendable {
    /// `BA` (SIA) or `130` (Contact ID).
    public let code: String
    /// Contact ID's qualifier: 1 a new event, 3 a restore, 6 a status report; nil for SIA.
    public let qualifier: Character?
    /// The zone, or the user for the codes that carry one.
    public let zone: String?
    public let area: String?

    public init(code: String, qualifier: Character?, zone: String?, area: String?) {
        (self.code, self.qualifier, self.zone, self.area) = (code, qualifier, zone, area)
    }

    /// The message's events; a link test has none. Refused past `DC09.maxEvents`, or when a
    /// Contact ID block is not `QEEE GG ZZZ`.
    public static func events(in frame: DC09.Frame) throws(DC09.Refusal) -> [DC09Event] {
        var data = Substring(frame.data)
        // The account again, before a `|`: the block's own (a cloud receiver's panels differ from the frame's).
        if data.hasPrefix("#"), let bar = data.firstIndex(of: "|") { data = data[data.index(after: bar)...] }
        switch frame.header.token {
        case .null:
            return []
        case .contactID:
            let digits = data.filter { $0 != " " }
            guard digits.count == 9, digits.allSatisfy(\.isASCII), digits.allSatisfy({ $0.isNumber || $0.isHexDigit }),
                  let qualifier = digits.first, "136".contains(qualifier) else {
                throw .unsupported("a Contact ID block that is not QEEE GG ZZZ")
            }
            let chars = Array(digits)
            return [DC09Event(code: String(chars[1...3]), qualifier: qualifier, zone: String(chars[6...8]), area: String(chars[4...5]))]
        case .sia:
            return try siaEvents(data)
        }
    }

    private static func siaEvents(_ data: Substring) throws(DC09.Refusal) -> [DC09Event] {
        var text = data
        if text.first == "N" || text.first == "O" { text = text.dropFirst() }
        var events: [DC09Event] = []
        var area: String?
        for raw in text.split(separator: "/", omittingEmptySubsequences: true) {
            // Words between carets (a zone's or user's name) are text, not fields.
            let piece = raw.split(separator: "^", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 0 }.map(\.element).joined()
            let chars = Array(piece)
            guard chars.count >= 2 else { continue }
            let head = String(chars[0...1])
            switch head {
            case "ri", "pi":
                area = String(chars[2...])
            case "id", "ti", "da", "lp", "ai":
                continue
            default:
                guard chars[0].isUppercase, chars[1].isUppercase, chars[0].isASCII, chars[1].isASCII else { continue }
                let zone = String(chars[2...].prefix { $0.isNumber })
                events.append(DC09Event(code: head, qualifier: nil, zone: zone.isEmpty ? nil : zone, area: area))
                guard events.count <= DC09.maxEvents else { throw .unsupported("more than \(DC09.maxEvents) events in one message") }
            }
        }
        return events
    }
}
