import Foundation

/// A small XML 1.0 reader for documents from outside (CAP warnings, issue #60): UTF-8 only,
/// namespace-aware, non-validating, and closed to the attacks XML invites. A document type
/// declaration is refused outright, so no entity is ever defined, expanded (the "billion
/// laughs") or fetched (external entities); only the five predefined entities and character
/// references are read. Size, depth, element count and attribute count are bounded. Pure:
/// bytes in, a tree out.
public enum XMLReader {
    public struct Limits: Sendable {
        public var maxBytes = 1 << 20
        public var maxDepth = 32
        public var maxElements = 20_000
        public var maxAttributes = 32
        public init() {}
    }

    /// Why a document is refused, with the byte offset where reading stopped.
    public struct Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        public let reason: String
        public let offset: Int
        public var description: String { "\(reason) (at byte \(offset))" }
    }

    /// Reads a whole document: its root element.
    public static func parse(_ bytes: [UInt8], limits: Limits = Limits()) throws(Refusal) -> XMLElement {
        guard bytes.count <= limits.maxBytes else { throw Refusal(reason: "the document is over \(limits.maxBytes) bytes", offset: 0) }
        var parser = Parser(bytes: bytes, limits: limits)
        return try parser.document()
    }
}

/// An element: its namespace and local name, attributes, child elements and the text directly
/// inside it (character data and CDATA, joined).
public struct XMLElement: Equatable, Sendable {
    public let namespace: String?
    public let name: String
    public let attributes: [String: String]
    public let children: [XMLElement]
    public let text: String

    /// The first child with this local name in `namespace`.
    public func child(_ name: String, in namespace: String?) -> XMLElement? {
        children.first { $0.name == name && $0.namespace == namespace }
    }

    public func children(_ name: String, in namespace: String?) -> [XMLElement] {
        children.filter { $0.name == name && $0.namespace == namespace }
    }
}

private struct Parser {
    let bytes: [UInt8]
    let limits: XMLReader.Limits
    var index = 0
    var elements = 0

    init(bytes: [UInt8], limits: XMLReader.Limits) {
        self.bytes = bytes
        self.limits = limits
    }

    func refuse(_ reason: String) -> XMLReader.Refusal { XMLReader.Refusal(reason: reason, offset: index) }

    // MARK: - Document

    mutating func document() throws(XMLReader.Refusal) -> XMLElement {
        guard String(validating: bytes, as: UTF8.self) != nil else { throw refuse("the document is not UTF-8") }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        if starts("<?xml") { try declaration() }
        try misc()
        guard starts("<"), !starts("</") else { throw refuse("no root element") }
        let root = try element(depth: 1, scopes: [["xml": "http://www.w3.org/XML/1998/namespace"]])
        try misc()
        guard index == bytes.count else { throw refuse("something after the root element") }
        return root
    }

    /// The XML declaration: its encoding must be UTF-8 when it names one.
    mutating func declaration() throws(XMLReader.Refusal) {
        guard let end = find("?>") else { throw refuse("an unclosed XML declaration") }
        let text = String(decoding: bytes[index..<end], as: UTF8.self).lowercased()
        if let range = text.range(of: "encoding") {
            let rest = text[range.upperBound...].drop { $0 == " " || $0 == "=" || $0 == "\"" || $0 == "'" }
            let encoding = rest.prefix { $0 != "\"" && $0 != "'" }
            guard encoding == "utf-8" || encoding == "utf8" else { throw refuse("the document's encoding is \(encoding), not UTF-8") }
        }
        index = end + 2
    }

    /// Whitespace, comments and processing instructions between the declaration, the root and the end.
    mutating func misc() throws(XMLReader.Refusal) {
        while true {
            skipSpace()
            if starts("<!--") {
                try comment()
            } else if starts("<!DOCTYPE") || starts("<!doctype") {
                throw refuse("a document type declaration (entities are not read)")
            } else if starts("<?") {
                guard let end = find("?>") else { throw refuse("an unclosed processing instruction") }
                index = end + 2
            } else {
                return
            }
        }
    }

    mutating func comment() throws(XMLReader.Refusal) {
        guard let end = find("-->", from: index + 4) else { throw refuse("an unclosed comment") }
        index = end + 3
    }

    // MARK: - Elements

    mutating func element(depth: Int, scopes: [[String: String]]) throws(XMLReader.Refusal) -> XMLElement {
        guard depth <= limits.maxDepth else { throw refuse("elements nested deeper than \(limits.maxDepth)") }
        elements += 1
        guard elements <= limits.maxElements else { throw refuse("more than \(limits.maxElements) elements") }
        index += 1  // <
        let qualified = try name()
        var raw: [(String, String)] = []
        while true {
            let spaced = skipSpace()
            guard index < bytes.count else { throw refuse("an unclosed start tag") }
            if starts("/>") || starts(">") { break }
            guard spaced else { throw refuse("attributes must be separated by whitespace") }
            let attribute = try name()
            skipSpace()
            guard take("=") else { throw refuse("an attribute without a value") }
            skipSpace()
            let value = try quoted()
            guard !raw.contains(where: { $0.0 == attribute }) else { throw refuse("the attribute \(attribute) twice") }
            raw.append((attribute, value))
            guard raw.count <= limits.maxAttributes else { throw refuse("more than \(limits.maxAttributes) attributes") }
        }
        // Namespace declarations open a scope for this element and its content.
        var scope: [String: String] = [:]
        var attributes: [String: String] = [:]
        for (key, value) in raw {
            if key == "xmlns" {
                scope[""] = value
            } else if key.hasPrefix("xmlns:") {
                scope[String(key.dropFirst(6))] = value
            } else {
                attributes[key] = value
            }
        }
        let scopes = scope.isEmpty ? scopes : scopes + [scope]
        let (prefix, local) = Self.split(qualified)
        guard let namespace = Self.resolve(prefix, in: scopes) else { throw refuse("the prefix \(prefix ?? "") is not declared") }
        if take("/>") {
            return XMLElement(namespace: namespace.isEmpty ? nil : namespace, name: local, attributes: attributes, children: [], text: "")
        }
        index += 1  // >
        var children: [XMLElement] = []
        var text: [UInt8] = []
        while true {
            guard index < bytes.count else { throw refuse("the element \(qualified) is not closed") }
            if starts("</") {
                index += 2
                guard try name() == qualified else { throw refuse("the element \(qualified) is closed by another") }
                skipSpace()
                guard take(">") else { throw refuse("an end tag not closed by >") }
                break
            } else if starts("<!--") {
                try comment()
            } else if starts("<![CDATA[") {
                guard let end = find("]]>", from: index + 9) else { throw refuse("an unclosed CDATA section") }
                text += bytes[(index + 9)..<end]
                index = end + 3
            } else if starts("<!") {
                throw refuse("a declaration inside the document")
            } else if starts("<?") {
                guard let end = find("?>") else { throw refuse("an unclosed processing instruction") }
                index = end + 2
            } else if starts("<") {
                children.append(try element(depth: depth + 1, scopes: scopes))
            } else if bytes[index] == UInt8(ascii: "&") {
                text += try reference()
            } else {
                text.append(bytes[index])
                index += 1
            }
        }
        return XMLElement(namespace: namespace.isEmpty ? nil : namespace, name: local, attributes: attributes, children: children,
                          text: String(decoding: text, as: UTF8.self))
    }

    static func split(_ qualified: String) -> (prefix: String?, local: String) {
        guard let colon = qualified.firstIndex(of: ":") else { return (nil, qualified) }
        return (String(qualified[..<colon]), String(qualified[qualified.index(after: colon)...]))
    }

    /// The namespace of a prefix (nil prefix: the default, "" when none is declared); nil when undeclared.
    static func resolve(_ prefix: String?, in scopes: [[String: String]]) -> String? {
        for scope in scopes.reversed() {
            if let namespace = scope[prefix ?? ""] { return namespace }
        }
        return prefix == nil ? "" : nil
    }

    // MARK: - Pieces

    /// A name: letters, digits and `_ - . :`, or any byte past ASCII (UTF-8 names).
    mutating func name() throws(XMLReader.Refusal) -> String {
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            let isName = byte >= 0x80 || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ":")
            guard isName else { break }
            index += 1
        }
        guard index > start, !(bytes[start] >= 0x30 && bytes[start] <= 0x39), bytes[start] != UInt8(ascii: "-") else { throw refuse("a bad name") }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    mutating func quoted() throws(XMLReader.Refusal) -> String {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
            throw refuse("an attribute value not in quotes")
        }
        let quote = bytes[index]
        index += 1
        var value: [UInt8] = []
        while true {
            guard index < bytes.count else { throw refuse("an unclosed attribute value") }
            let byte = bytes[index]
            if byte == quote { break }
            if byte == UInt8(ascii: "<") { throw refuse("< in an attribute value") }
            if byte == UInt8(ascii: "&") {
                value += try reference()
            } else {
                value.append(byte)
                index += 1
            }
        }
        index += 1
        return String(decoding: value, as: UTF8.self)
    }

    /// `&lt;` `&gt;` `&amp;` `&apos;` `&quot;` and `&#…;` / `&#x…;`; any other entity is undefined.
    mutating func reference() throws(XMLReader.Refusal) -> [UInt8] {
        guard let end = bytes[index...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else { throw refuse("an & that starts no reference") }
        let body = String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
        index = end + 1
        switch body {
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "amp": return [UInt8(ascii: "&")]
        case "apos": return [UInt8(ascii: "'")]
        case "quot": return [UInt8(ascii: "\"")]
        default:
            let number: UInt32?
            if body.hasPrefix("#x") {
                number = UInt32(body.dropFirst(2), radix: 16)
            } else if body.hasPrefix("#") {
                number = UInt32(body.dropFirst(), radix: 10)
            } else {
                throw refuse("the entity &\(body.prefix(20)); is not defined")
            }
            guard let number, let scalar = Unicode.Scalar(number), number != 0 else { throw refuse("a character reference to no character") }
            return Array(String(Character(scalar)).utf8)
        }
    }

    @discardableResult
    mutating func skipSpace() -> Bool {
        let start = index
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D { index += 1 }
        return index > start
    }

    func starts(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard bytes.count - index >= count else { return false }
        return text.withUTF8Buffer { prefix in
            (0..<count).allSatisfy { bytes[index + $0] == prefix[$0] }
        }
    }

    mutating func take(_ text: StaticString) -> Bool {
        guard starts(text) else { return false }
        index += text.utf8CodeUnitCount
        return true
    }

    /// Where `text` next begins at or after `from` (default: here).
    func find(_ text: StaticString, from start: Int? = nil) -> Int? {
        let needle = text.withUTF8Buffer { Array($0) }
        var position = start ?? index
        while position + needle.count <= bytes.count {
            if bytes[position] == needle[0], Array(bytes[position..<(position + needle.count)]) == needle { return position }
            position += 1
        }
        return nil
    }
}
