/// Free text a person writes (names, messages, notes, resolutions): trimmed of surrounding
/// white space, between a lower and an upper count of characters, with no control characters
/// (line breaks and tabs allowed where a field may have several lines). Refused with a 400
/// naming the field.
public enum BoundedText {
    public static func validate(_ value: String, field: String, range: ClosedRange<Int>, allowNewlines: Bool = false) throws(APIError) -> String {
        let trimmed = trimmed(value)
        let badControl = trimmed.unicodeScalars.contains { scalar in
            scalar.properties.generalCategory == .control && !(allowNewlines && (scalar == "\n" || scalar == "\r" || scalar == "\t"))
        }
        guard range.contains(trimmed.count), !badControl else {
            throw APIError.invalid("\(field) must be \(range.lowerBound) to \(range.upperBound) characters without control characters", field)
        }
        return trimmed
    }

    /// A name shown to others (a display name, a group's, a bridge's, a contact's): free text
    /// as `validate`, and no Unicode format characters (general category Cf: soft hyphens,
    /// invisible separators, tags), least of all the bidirectional controls that make a name read
    /// as another ("Ann\u{202E}nimda"). The zero-width joiner and non-joiner stay: emoji
    /// sequences and Persian names need them.
    public static func name(_ value: String, field: String, range: ClosedRange<Int>) throws(APIError) -> String {
        let text = try validate(value, field: field, range: range)
        let hidden = text.unicodeScalars.contains { scalar in
            scalar.properties.generalCategory == .format && scalar != "\u{200C}" && scalar != "\u{200D}"
        }
        guard !hidden else { throw APIError.invalid("\(field) must not contain invisible or direction-changing characters", field) }
        return text
    }

    /// `value` without the white space (Unicode White_Space, line breaks included) at either
    /// end, scalar by scalar, as Foundation's `trimmingCharacters(in: .whitespacesAndNewlines)`.
    public static func trimmed(_ value: String) -> String {
        let scalars = value.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }

    /// An identifier a client chooses (`client_msg_id`, a bridge's `dedup_key`): 1 to `maxCount`
    /// characters, no control characters, kept exactly as sent.
    public static func clientKey(_ value: String, field: String, maxCount: Int = 200) throws(APIError) -> String {
        guard (1...maxCount).contains(value.count), !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw APIError.invalid("\(field) must be 1 to \(maxCount) characters, no control characters", field)
        }
        return value
    }
}
