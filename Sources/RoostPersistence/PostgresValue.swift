import Foundation
import RoostProtocol

/// A PostgreSQL type OID, as sent with each parameter so the server never has to guess.
public struct PostgresType: Hashable, Sendable {
    public let oid: UInt32
    public init(oid: UInt32) { self.oid = oid }

    public static let bool = PostgresType(oid: 16)
    public static let bytea = PostgresType(oid: 17)
    public static let int8 = PostgresType(oid: 20)
    public static let int4 = PostgresType(oid: 23)
    public static let text = PostgresType(oid: 25)
    public static let float8 = PostgresType(oid: 701)
    public static let textArray = PostgresType(oid: 1009)
    public static let timestamptz = PostgresType(oid: 1184)
    public static let uuid = PostgresType(oid: 2950)
    public static let uuidArray = PostgresType(oid: 2951)
    public static let jsonb = PostgresType(oid: 3802)
}

/// One bound parameter: its type and its text-format value (nil is SQL NULL).
public struct PostgresBind: Sendable, Equatable {
    public var type: PostgresType
    public var text: String?
    /// The value in PostgreSQL's binary format, sent instead of `text` when set (bytea: the
    /// bytes themselves, not twice as many hex digits).
    public var binary: [UInt8]?
    public init(type: PostgresType, text: String?, binary: [UInt8]? = nil) {
        self.type = type
        self.text = text
        self.binary = binary
    }
}

/// A Swift value that can travel to PostgreSQL as a parameter (text format, or binary where
/// the type offers it).
public protocol PostgresEncodable: Sendable {
    static var postgresType: PostgresType { get }
    /// The value in PostgreSQL's text input format; nil for NULL.
    func postgresText() throws -> String?
    /// The value in PostgreSQL's binary format, when the type sends it so; nil: text.
    var postgresBinary: [UInt8]? { get }
}

/// A Swift value that can be read from a column in PostgreSQL's text output format.
public protocol PostgresDecodable {
    init(postgresText text: String) throws(PostgresDecodingFailure)
}

/// Why a text value could not become the requested type; the row adds the column's name.
public struct PostgresDecodingFailure: Error, Sendable {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
}

public typealias PostgresCodable = PostgresEncodable & PostgresDecodable

extension PostgresEncodable {
    public var postgresBinary: [UInt8]? { nil }

    var bind: PostgresBind {
        get throws {
            if let binary = postgresBinary { return PostgresBind(type: Self.postgresType, text: nil, binary: binary) }
            return PostgresBind(type: Self.postgresType, text: try postgresText())
        }
    }
}

extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public static var postgresType: PostgresType { Wrapped.postgresType }
    public func postgresText() throws -> String? {
        switch self {
        case .none: return nil
        case .some(let value): return try value.postgresText()
        }
    }
    public var postgresBinary: [UInt8]? { self?.postgresBinary }
}

extension String: PostgresCodable {
    public static var postgresType: PostgresType { .text }
    public func postgresText() -> String? { self }
    public init(postgresText text: String) { self = text }
}

extension Int64: PostgresCodable {
    public static var postgresType: PostgresType { .int8 }
    public func postgresText() -> String? { String(self) }
    public init(postgresText text: String) throws(PostgresDecodingFailure) {
        guard let value = Int64(text) else { throw PostgresDecodingFailure("'\(text)' is not an integer") }
        self = value
    }
}

extension Int: PostgresCodable {
    public static var postgresType: PostgresType { .int8 }
    public func postgresText() -> String? { String(self) }
    public init(postgresText text: String) throws(PostgresDecodingFailure) {
        guard let value = Int(text) else { throw PostgresDecodingFailure("'\(text)' is not an integer") }
        self = value
    }
}

extension Int32: PostgresCodable {
    public static var postgresType: PostgresType { .int4 }
    public func postgresText() -> String? { String(self) }
    public init(postgresText text: String) throws(PostgresDecodingFailure) {
        guard let value = Int32(text) else { throw PostgresDecodingFailure("'\(text)' is not a 32-bit integer") }
        self = value
    }
}

extension Bool: PostgresCodable {
    public static var postgresType: PostgresType { .bool }
    public func postgresText() -> String? { self ? "t" : "f" }
    public init(postgresText text: String) throws(PostgresDecodingFailure) {
        switch text {
        case "t", "true": self = true
        case "f", "false": self = false
        default: throw PostgresDecodingFailure("'\(text)' is not a boolean")
        }
    }
}

extension Double: PostgresCodable {
    public static var postgresType: PostgresType { .float8 }
    public func postgresText() -> String? {
        if isNaN { return "NaN" }
        if isInfinite { return self > 0 ? "Infinity" : "-Infinity" }
        return "\(self)"
    }
    public init(postgresText text: String) throws(PostgresDecodingFailure) {
        switch text {
        case "NaN": self = .nan
        case "Infinity": self = .infinity
        case "-Infinity": self = -.infinity
        default:
            guard let value = Double(text) else { throw PostgresDecodingFailure("'\(text)' is not a number") }
            self = value
        }
    }
}

extension UUID: PostgresCodable {
    public static var postgresType: PostgresType { .uuid }
    public func postgresText() -> String? { lowercasedText }
    public init(postgresText text: String) throws(PostgresDecodingFailure) {
        guard let value = UUID(text: text) else { throw PostgresDecodingFailure("'\(text)' is not a UUID") }
        self = value
    }
}

extension Data: PostgresCodable {
    public static var postgresType: PostgresType { .bytea }
    /// Sent as binary: the bytes as they are (a media chunk is 256 KiB, not 512 KiB of hex).
    public var postgresBinary: [UInt8]? { Array(self) }
    /// bytea's hex input format: `\x` then two hex digits a byte.
    public func postgresText() -> String? {
        // Written straight into the string's storage: a media chunk's text is half a megabyte,
        // and an intermediate array would double what every upload in flight holds.
        String(unsafeUninitializedCapacity: 2 + count * 2) { out in
            let digits: StaticString = "0123456789abcdef"
            out[0] = UInt8(ascii: "\\")
            out[1] = UInt8(ascii: "x")
            var index = 2
            digits.withUTF8Buffer { digits in
                for byte in self {
                    out[index] = digits[Int(byte >> 4)]
                    out[index + 1] = digits[Int(byte & 0x0F)]
                    index += 2
                }
            }
            return index
        }
    }
    public init(postgresText text: String) throws(PostgresDecodingFailure) {
        var text = text
        // Read in place (a media chunk's text is half a megabyte): no copy of the digits.
        self = Data(try text.withUTF8 { Self.decodeHex($0) }.get())
    }

    private static func decodeHex(_ utf8: UnsafeBufferPointer<UInt8>) -> Result<[UInt8], PostgresDecodingFailure> {
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else {
            return .failure(PostgresDecodingFailure("bytea is not in hex format"))
        }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var bytes = [UInt8]()
        bytes.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else {
                return .failure(PostgresDecodingFailure("bytea has a non-hex digit"))
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return .success(bytes)
    }
}

extension Date: PostgresCodable {
    public static var postgresType: PostgresType { .timestamptz }
    public func postgresText() -> String? { PostgresTimestamp.format(self) }
    public init(postgresText text: String) throws(PostgresDecodingFailure) {
        self = try PostgresTimestamp.parse(text)
    }
}

/// A JSON document stored as `jsonb`, encoded and decoded with Foundation's Codable.
public struct JSONB<Value: Codable & Sendable>: PostgresCodable, Sendable {
    public var value: Value
    public init(_ value: Value) { self.value = value }

    public static var postgresType: PostgresType { .jsonb }
    public func postgresText() throws -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
    public init(postgresText text: String) throws(PostgresDecodingFailure) {
        do {
            value = try JSONDecoder().decode(Value.self, from: Data(text.utf8))
        } catch {
            throw PostgresDecodingFailure("JSON does not decode as \(Value.self): \(error)")
        }
    }
}

extension Array: PostgresEncodable where Element: PostgresArrayElement {
    public static var postgresType: PostgresType { Element.postgresArrayType }
    public func postgresText() throws -> String? {
        try PostgresArrayLiteral.format(map { try $0.postgresText() })
    }
}

extension Array: PostgresDecodable where Element: PostgresArrayElement {
    public init(postgresText text: String) throws(PostgresDecodingFailure) {
        let elements = try PostgresArrayLiteral.parse(text)
        var values: [Element] = []
        values.reserveCapacity(elements.count)
        for element in elements {
            guard let element else { throw PostgresDecodingFailure("array has a NULL element") }
            values.append(try Element(postgresText: element))
        }
        self = values
    }
}

/// An element type that has a one-dimensional array type in PostgreSQL.
public protocol PostgresArrayElement: PostgresCodable {
    static var postgresArrayType: PostgresType { get }
}

extension String: PostgresArrayElement {
    public static var postgresArrayType: PostgresType { .textArray }
}

extension UUID: PostgresArrayElement {
    public static var postgresArrayType: PostgresType { .uuidArray }
}
