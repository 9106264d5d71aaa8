/// One-dimensional array literals in PostgreSQL's text format: `{a,"b c",NULL}`.
enum PostgresArrayLiteral {
    /// Every element is double-quoted, with `"` and `\` escaped, so no content can be misread.
    /// Written as UTF-8 bytes: both are ASCII, which no byte of a longer character can be (a
    /// shared commit's lines go as arrays, and scalar by scalar this was a fifth of the server's
    /// CPU a post at concurrency 32).
    static func format(_ elements: [String?]) -> String {
        let (quote, backslash) = (UInt8(ascii: "\""), UInt8(ascii: "\\"))
        var out: [UInt8] = []
        out.reserveCapacity(elements.reduce(2) { $0 + ($1?.utf8.count ?? 4) + 3 })
        out.append(UInt8(ascii: "{"))
        for (index, element) in elements.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            guard let element else {
                out.append(contentsOf: "NULL".utf8)
                continue
            }
            out.append(quote)
            for byte in element.utf8 {
                if byte == quote || byte == backslash { out.append(backslash) }
                out.append(byte)
            }
            out.append(quote)
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
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
