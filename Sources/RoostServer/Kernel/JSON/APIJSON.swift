import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// JSON responses as API.md writes them: snake_case keys (set by each type's CodingKeys) and
/// RFC 3339 UTC times with milliseconds (`2026-11-21T10:00:00.123Z`).
public enum APIJSON {
    public static func encode<Value: Encodable>(_ value: Value) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(time(date))
        }
        return Array(try encoder.encode(value))
    }

    /// A time as API.md writes one, for JSON assembled by hand.
    public static func time(_ date: Date) -> String { date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)) }

    /// An RFC 3339 time a client sent, with or without fractional seconds; nil for anything else.
    static func date(_ text: String) -> Date? {
        let precise = ISO8601DateFormatter()
        precise.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return precise.date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }

    public static func response<Value: Encodable>(_ status: HTTPStatus, _ value: Value) throws -> HTTPResponse {
        .json(status, try encode(value))
    }
}

/// A list page (API.md "Conventions"): `{"items": [...], "next": cursor or null}`.
public struct Page<Item: Encodable>: Encodable {
    public let items: [Item]
    /// null on the last page.
    @Null public var next: String?

    public init(items: [Item], next: String?) {
        self.items = items
        self.next = next
    }
}

extension APIError {
    /// The one mapping from database failures to API errors: unreachable or exhausted → 503;
    /// a unique violation → 409. Anything else is not the client's fault and stays an error
    /// (a logged 500).
    public static func from(_ error: DatabaseError) -> APIError? {
        switch error.code {
        case .unavailable, .unreachable, .connectionLost:
            return APIError(.serviceUnavailable, code: .unavailable, message: "the database is unavailable; try again shortly",
                            headers: ["Retry-After": "1"])
        case .uniqueViolation:
            return APIError(.conflict, code: .conflict, message: "that already exists")
        case .characterNotInRepertoire, .invalidTextRepresentation, .checkViolation, .stringDataRightTruncation:
            // Input PostgreSQL refuses (a NUL, a value outside a column's rule) is the client's.
            return APIError(.badRequest, code: .validationFailed, message: "a value in the request is not acceptable")
        default:
            return nil
        }
    }

    /// The application's error mapper for the transport (`HTTPServer(errorMapper:)`): database
    /// failures as `from(_:)` maps them, for every route and WebSocket acceptor.
    public static let mapping: ErrorMapper = { error in (error as? DatabaseError).flatMap(APIError.from) }
}

extension RequestContext {
    /// The `limit` query parameter, 1...200, 50 when absent (API.md "Conventions").
    public func limit() throws(APIError) -> Int {
        guard let text = request.target.queryValue("limit") else { return 50 }
        guard let value = Int(text), (1...200).contains(value) else {
            throw APIError.invalid("limit must be a whole number from 1 to 200", "limit")
        }
        return value
    }

    /// The `cursor` query parameter of a list whose `next` is an item's id; nil when absent,
    /// 400 naming it when it is not an id.
    public func cursorID() throws(APIError) -> UUID? {
        guard let text = request.target.queryValue("cursor") else { return nil }
        guard let id = UUID(text: text) else { throw APIError.invalid("cursor must be the next value of the previous page", "cursor") }
        return id
    }

    /// The `cursor` query parameter (or `name`) of a keyset list, read by `read` from the fields
    /// its `next` wrote (`ListCursor`); nil when absent, 400 naming it when it is not such a value.
    public func cursor<Key>(_ read: (ListCursor) -> Key?, name: String = "cursor") throws(APIError) -> Key? {
        guard let text = request.target.queryValue(name) else { return nil }
        guard text.utf8.count <= ListCursor.maxLength, let key = read(ListCursor(parsing: text)) else {
            throw APIError.invalid("\(name) must be the next value of the previous page", name)
        }
        return key
    }

    /// The bearer token of the `Authorization` header (`Bearer`, in any case, then the token
    /// after spaces or tabs), if any. Read byte by byte: every signed-in request passes here.
    public var bearerToken: String? {
        guard let value = request.headers["Authorization"] else { return nil }
        let bytes = value.utf8
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        guard let schemeStart = bytes.firstIndex(where: { !isBlank($0) }),
              let schemeEnd = bytes[schemeStart...].firstIndex(where: isBlank),
              bytes[schemeStart..<schemeEnd].elementsEqual("bearer".utf8, by: { $0 | 0x20 == $1 }),
              let tokenStart = bytes[schemeEnd...].firstIndex(where: { !isBlank($0) }),
              let tokenLast = bytes[tokenStart...].lastIndex(where: { !isBlank($0) }) else {
            return nil
        }
        // Up to the blank after the token (or the end): a character boundary, whatever the token holds.
        return String(value[tokenStart..<bytes.index(after: tokenLast)])
    }
}

/// A UUID written the way the API writes every id: lower-case (Foundation's encoder would use
/// upper case, unlike PostgreSQL and the event data).
@propertyWrapper
public struct LowercaseID: Encodable, Sendable, Equatable {
    public var wrappedValue: UUID
    public init(wrappedValue: UUID) { self.wrappedValue = wrappedValue }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrappedValue.lowercasedText)
    }
}

/// An optional field the API writes as `null` when it has no value (API.md "Conventions": fields
/// are never left out), where a synthesized `Encodable` would leave the key out: views declare
/// the field `@Null` and keep the synthesized encoding.
@propertyWrapper
public struct Null<Value: Encodable & Sendable>: Encodable, Sendable {
    public var wrappedValue: Value?
    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

extension KeyedDecodingContainer {
    /// A setting a PATCH body may leave out (unchanged), set, or clear with null.
    func decodeSetting<Value: Decodable & Sendable & Equatable>(_ type: Value.Type, forKey key: Key) throws -> SettingChange<Value?> {
        contains(key) ? .set(try decodeIfPresent(type, forKey: key)) : .unchanged
    }
}
