/// A JSON text (RFC 8259) read into values: what a request body becomes before `JSONBodyDecoder`
/// decodes it into its type. Strict where RFC 8259 allows leeway: exactly one value with only
/// whitespace around it, strings of valid UTF-8 whose escapes name whole characters (a lone
/// surrogate is refused), numbers in the RFC's grammar, no name twice in one object (two readers
/// must not disagree on which one counts), and at most `maxDepth` arrays and objects deep.
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// A number as written; the grammar is checked here, the range by whoever reads it.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Deeper nesting is refused rather than followed down the stack.
    public static let maxDepth = 128

    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer throws(JSONSyntaxError) in
            var parser = JSONParser(bytes: buffer)
            parser.skipWhitespace()
            let value = try parser.value(depth: 0)
            parser.skipWhitespace()
            guard parser.index == buffer.count else { throw parser.failure("text after the value") }
            return value
        }
    }
}

/// Why a text is not JSON, and the byte offset where that was found.
public struct JSONSyntaxError: Error, Equatable, Sendable, CustomStringConvertible {
    public let offset: Int
    public let reason: String

    public var description: String { "\(reason) at byte \(offset)" }
}

private struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    func failure(_ reason: String) -> JSONSyntaxError {
        JSONSyntaxError(offset: index, reason: reason)
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): index += 1
            default: return
            }
        }
    }

    mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard index < bytes.count else { throw failure("the text ends where a value should be") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw failure("no value starts with this byte")
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw failure("not \(word)") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw failure("not \(word)") }
        index += count
    }

    private mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= JSONValue.maxDepth else { throw failure("nested deeper than \(JSONValue.maxDepth)") }
        var members: [String: JSONValue] = [:]
        guard !opens(closing: UInt8(ascii: "}")) else { return .object(members) }
        while true {
            guard index < bytes.count && bytes[index] == UInt8(ascii: "\"") else { throw failure("an object's member must start with its name") }
            let nameAt = index
            let name = try string()
            skipWhitespace()
            guard index < bytes.count && bytes[index] == UInt8(ascii: ":") else { throw failure("a member's name must be followed by ':'") }
            index += 1
            skipWhitespace()
            let member = try value(depth: depth)
            guard members.updateValue(member, forKey: name) == nil else {
                throw JSONSyntaxError(offset: nameAt, reason: "the name \(JSONString.quote(name)) appears twice in one object")
            }
            if try closes(UInt8(ascii: "}"), "an object") { return .object(members) }
        }
    }

    private mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= JSONValue.maxDepth else { throw failure("nested deeper than \(JSONValue.maxDepth)") }
        var elements: [JSONValue] = []
        guard !opens(closing: UInt8(ascii: "]")) else { return .array(elements) }
        while true {
            elements.append(try value(depth: depth))
            if try closes(UInt8(ascii: "]"), "an array") { return .array(elements) }
        }
    }

    /// Steps past an opening bracket and the whitespace after it; true (and past it) when the
    /// closing bracket follows at once.
    private mutating func opens(closing: UInt8) -> Bool {
        index += 1
        skipWhitespace()
        guard index < bytes.count && bytes[index] == closing else { return false }
        index += 1
        return true
    }

    /// After a member or an element: true past the closing bracket, false past a comma.
    private mutating func closes(_ closing: UInt8, _ container: String) throws(JSONSyntaxError) -> Bool {
        skipWhitespace()
        guard index < bytes.count else { throw failure("the text ends inside \(container)") }
        switch bytes[index] {
        case UInt8(ascii: ","):
            index += 1
            skipWhitespace()
            return false
        case closing:
            index += 1
            return true
        default:
            throw failure("expected ',' or '\(Character(Unicode.Scalar(closing)))' in \(container)")
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, returned as written.
    private mutating func number() throws(JSONSyntaxError) -> String {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, ASCII.isDigit(bytes[index]) else { throw failure("a number needs a digit here") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            skipDigits()
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, ASCII.isDigit(bytes[index]) else { throw failure("a number's fraction needs a digit") }
            skipDigits()
        }
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            index += 1
            if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) { index += 1 }
            guard index < bytes.count, ASCII.isDigit(bytes[index]) else { throw failure("a number's exponent needs a digit") }
            skipDigits()
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    private mutating func skipDigits() {
        while index < bytes.count && ASCII.isDigit(bytes[index]) { index += 1 }
    }

    /// A string from its opening quote. Without escapes (the usual case) its bytes are validated
    /// as UTF-8 in place; with them, they are copied with each escape replaced.
    private mutating func string() throws(JSONSyntaxError) -> String {
        index += 1
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = try validated(UnsafeBufferPointer(rebasing: bytes[start..<index]), from: start)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw failure("a control character must be escaped in a string") }
            index += 1
        }
        var unescaped = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                let text = try unescaped.withUnsafeBufferPointer { text throws(JSONSyntaxError) in try validated(text, from: start) }
                index += 1
                return text
            case UInt8(ascii: "\\"):
                try escape(into: &unescaped)
            case ..<0x20:
                throw failure("a control character must be escaped in a string")
            default:
                unescaped.append(byte)
                index += 1
            }
        }
        throw failure("the text ends inside a string")
    }

    private func validated(_ text: UnsafeBufferPointer<UInt8>, from start: Int) throws(JSONSyntaxError) -> String {
        guard let string = String(validating: text, as: UTF8.self) else {
            throw JSONSyntaxError(offset: start, reason: "a string is not valid UTF-8")
        }
        return string
    }

    /// One escape from its backslash, its character appended as UTF-8.
    private mutating func escape(into out: inout [UInt8]) throws(JSONSyntaxError) {
        index += 1
        guard index < bytes.count else { throw failure("the text ends inside an escape") }
        let letter = bytes[index]
        index += 1
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(letter)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var value = UInt32(try hex4())
            if value >= 0xD800 && value < 0xDC00 {
                // A high surrogate must be followed by the escape of a low one: together one character.
                guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw failure("a high surrogate escape without its low surrogate")
                }
                index += 2
                let low = UInt32(try hex4())
                guard low >= 0xDC00 && low < 0xE000 else { throw failure("a high surrogate escape without its low surrogate") }
                value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
            } else if value >= 0xDC00 && value < 0xE000 {
                throw failure("a low surrogate escape without its high surrogate")
            }
            out.append(contentsOf: Unicode.UTF8.encode(Unicode.Scalar(value)!)!)
        default:
            index -= 1
            throw failure("no such escape")
        }
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt16 {
        guard bytes.count - index >= 4 else { throw failure("a \\u escape needs four hex digits") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard let digit = ASCII.hexValue(bytes[index]) else { throw failure("a \\u escape needs four hex digits") }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }
}
