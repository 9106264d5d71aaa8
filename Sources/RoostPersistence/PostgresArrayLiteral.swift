/// One-dimensional array literals in PostgreSQL's text format: `{a,"b c",NULL}`.
enum PostgresArrayLiteral {
    /// Every element is double-quoted, with `"` and `\` escaped, so no content can be misread.
    static func format(_ elements: [String?]) -> String {
        var out = "{"
        for (index, element) in elements.enumerated() {
            if index > 0 { out += "," }
            guard let element else {
                out += "NULL"
                continue
            }
            out += "\""
            for character in element.unicodeScalars {
                if character == "\"" || character == "\\" { out += "\\" }
                out.unicodeScalars.append(character)
            }
            out += "\""
        }
        return out + "}"
    }

    static func parse(_ text: String) throws(PostgresDecodingFailure) -> [String?] {
        let bytes = Array(text.utf8)
        guard bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else {
            throw PostgresDecodingFailure("'\(text)' is not a one-dimensional array")
        }
        var elements: [String?] = []
        var index = 1
        let end = bytes.count - 1
        if index == end { return [] }
        while index <= end {
            var value: [UInt8] = []
            var quoted = false
            if bytes[index] == UInt8(ascii: "\"") {
                quoted = true
                index += 1
                while index < end, bytes[index] != UInt8(ascii: "\"") {
                    if bytes[index] == UInt8(ascii: "\\") { index += 1 }
                    guard index < end else { break }
                    value.append(bytes[index])
                    index += 1
                }
                guard index < end else { throw PostgresDecodingFailure("unterminated quoted array element") }
                index += 1
            } else {
                while index < end, bytes[index] != UInt8(ascii: ",") {
                    guard bytes[index] != UInt8(ascii: "{") else {
                        throw PostgresDecodingFailure("multi-dimensional arrays are not supported")
                    }
                    value.append(bytes[index])
                    index += 1
                }
            }
            let element = String(decoding: value, as: UTF8.self)
            elements.append(!quoted && element == "NULL" ? nil : element)
            guard index == end || bytes[index] == UInt8(ascii: ",") else {
                throw PostgresDecodingFailure("array element is followed by garbage")
            }
            index += 1
        }
        return elements
    }
}
