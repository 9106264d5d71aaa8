/// Decodes a request body into its `Decodable` type over `JSONValue`'s strict reading, in place of
/// Foundation's `JSONDecoder` (one reader of every body, written and fuzzed here like the other
/// codecs; Benchmarks/before-and-after.md has what it changed). It throws the `DecodingError`s Foundation's does, with the same coding paths, so the API's
/// 400s name the same fields (`RequestContext.decodeJSON`): `keyNotFound` for a missing member,
/// `valueNotFound` for null where a value is needed, `typeMismatch` for a value of another kind,
/// `dataCorrupted` for a number out of its type's range, and `dataCorrupted` with an empty path
/// when the text is not JSON. Keys are matched as written; numbers convert as Foundation's do
/// (an integer type takes `100`, `1e2` or `100.0`, never `100.5`). No type is special-cased:
/// request bodies carry times, links and binary data as strings their routes read.
public struct JSONBodyDecoder {
    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: [], debugDescription: "The given data was not valid JSON: \(error).", underlyingError: error))
        }
        return try T(from: ValueDecoder(value: value, codingPath: []))
    }
}

private struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch([String: Any].self, value, codingPath) }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch([Any].self, value, codingPath) }
        return UnkeyedContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValue(value: value, codingPath: codingPath)
    }
}

// MARK: - Values

extension JSONValue {
    fileprivate var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    fileprivate var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

/// `valueNotFound` for null, `typeMismatch` for any other kind of value than `type` wants.
private func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
    if value.isNull {
        return .valueNotFound(type, DecodingError.Context(codingPath: path, debugDescription: "Expected \(type) value but found null instead."))
    }
    return .typeMismatch(type, DecodingError.Context(codingPath: path, debugDescription: "Expected to decode \(type) but found \(value.kind) instead."))
}

// The readers of single values take their coding path as an autoclosure: it is built (an array
// of existentials) only for an error, not for every field read.

private func unrepresentable(_ text: String, _ path: [any CodingKey]) -> DecodingError {
    .dataCorrupted(DecodingError.Context(codingPath: path, debugDescription: "Number \(text) is not representable in Swift."))
}

private func bool(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
    guard case .bool(let bool) = value else { throw mismatch(Bool.self, value, path()) }
    return bool
}

private func string(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
    guard case .string(let string) = value else { throw mismatch(String.self, value, path()) }
    return string
}

/// Integers as written (`-12`), or as a number with a fraction or exponent that is whole and in
/// range (`1e2`, `100.0`).
private func integer<Integer: FixedWidthInteger>(
    _ type: Integer.Type, _ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]
) throws -> Integer {
    guard case .number(let text) = value else { throw mismatch(type, value, path()) }
    if let integer = Integer(text) { return integer }
    guard let double = Double(text), let integer = Integer(exactly: double) else { throw unrepresentable(text, path()) }
    return integer
}

private func floating<Number: BinaryFloatingPoint & LosslessStringConvertible>(
    _ type: Number.Type, _ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]
) throws -> Number {
    guard case .number(let text) = value else { throw mismatch(type, value, path()) }
    guard let number = Number(text), number.isFinite else { throw unrepresentable(text, path()) }
    return number
}

// MARK: - Containers

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONValue {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, DecodingError.Context(codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue)."))
        }
        return value
    }

    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key).isNull }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try bool(member(key), path(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try string(member(key), path(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try floating(type, member(key), path(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try floating(type, member(key), path(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(type, member(key), path(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(type, member(key), path(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(type, member(key), path(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(type, member(key), path(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(type, member(key), path(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(type, member(key), path(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(type, member(key), path(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(type, member(key), path(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(type, member(key), path(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(type, member(key), path(key)) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try T(from: ValueDecoder(value: member(key), codingPath: path(key)))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: member(key), codingPath: path(key)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: member(key), codingPath: path(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: members["super"] ?? .null, codingPath: codingPath + [MemberKey("super")])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: members[key.stringValue] ?? .null, codingPath: path(key))
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    /// Where an element sits, its coding path built only when asked for (an error, a nested decoder).
    private struct Place {
        let codingPath: [any CodingKey]
        let index: Int
        var path: [any CodingKey] { codingPath + [MemberKey(index: index)] }
    }

    /// What reading past the last element throws.
    private func pastTheEnd(_ type: Any.Type) -> DecodingError {
        .valueNotFound(type, DecodingError.Context(
            codingPath: Place(codingPath: codingPath, index: currentIndex).path, debugDescription: "Unkeyed container is at end."))
    }

    /// The next element through `read`, and a step on only if it was read.
    private mutating func next<T>(_ type: T.Type, _ read: (JSONValue, Place) throws -> T) throws -> T {
        guard !isAtEnd else { throw pastTheEnd(type) }
        let value = try read(elements[currentIndex], Place(codingPath: codingPath, index: currentIndex))
        currentIndex += 1
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { throw pastTheEnd(Never?.self) }
        guard elements[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type) { try bool($0, $1.path) } }
    mutating func decode(_ type: String.Type) throws -> String { try next(type) { try string($0, $1.path) } }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type) { try floating(type, $0, $1.path) } }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type) { try floating(type, $0, $1.path) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type) { try integer(type, $0, $1.path) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type) { try integer(type, $0, $1.path) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type) { try integer(type, $0, $1.path) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type) { try integer(type, $0, $1.path) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type) { try integer(type, $0, $1.path) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type) { try integer(type, $0, $1.path) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type) { try integer(type, $0, $1.path) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type) { try integer(type, $0, $1.path) } }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type) { try integer(type, $0, $1.path) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type) { try integer(type, $0, $1.path) } }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try next(type) { try T(from: ValueDecoder(value: $0, codingPath: $1.path)) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next(KeyedDecodingContainer<NestedKey>.self) { try ValueDecoder(value: $0, codingPath: $1.path).container(keyedBy: type) }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next((any UnkeyedDecodingContainer).self) { try ValueDecoder(value: $0, codingPath: $1.path).unkeyedContainer() }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next((any Decoder).self) { ValueDecoder(value: $0, codingPath: $1.path) }
    }
}

private struct SingleValue: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { value.isNull }
    func decode(_ type: Bool.Type) throws -> Bool { try bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try floating(type, value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try floating(type, value, codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try integer(type, value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type, value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type, value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type, value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type, value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type, value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type, value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type, value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type, value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type, value, codingPath) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try T(from: ValueDecoder(value: value, codingPath: codingPath))
    }
}

/// A member's name or an element's place in a coding path (`intValue` for an element, which the
/// API's messages print as `items.0`).
private struct MemberKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(_ name: String) {
        stringValue = name
        intValue = nil
    }

    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }

    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
}
