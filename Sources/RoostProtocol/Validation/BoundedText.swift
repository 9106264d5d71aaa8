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
