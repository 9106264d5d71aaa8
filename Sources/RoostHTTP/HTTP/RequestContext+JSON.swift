import RoostProtocol

/// A request body that lists its fields, so that a field the API does not know is refused
/// (400 naming it) rather than silently ignored: a misspelt `display_nmae` must not look accepted.
public protocol KnownFields {
    static var fieldNames: Set<String> { get }
}

extension KnownFields where Self: Decodable {
    /// The names of a CaseIterable CodingKeys type.
    public static func names<Keys: CodingKey & CaseIterable>(_ keys: Keys.Type) -> Set<String> {
        Set(keys.allCases.map(\.stringValue))
    }
}

/// `Body` as the decoder reads it, after a look at the object's keys when `Body` lists its
/// fields: one parse of the body serves both (every post passes here).
private struct FieldsChecked<Body: Decodable>: Decodable {
    let body: Body

    init(from decoder: any Decoder) throws {
        // Anything but an object is left to `Body`'s own decoding, which says what is wrong.
        if let known = (Body.self as? KnownFields.Type)?.fieldNames,
           let object = try? decoder.container(keyedBy: AnyFieldKey.self),
           let unknown = object.allKeys.map(\.stringValue).sorted().first(where: { !known.contains($0) }) {
            throw UnknownField(name: unknown)
        }
        body = try Body(from: decoder)
    }
}

private struct AnyFieldKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// A field of the body that its type does not list (the first by name).
private struct UnknownField: Error {
    let name: String
}

extension RequestContext {
    /// The body decoded as JSON into `Body`, or the API's 400: `invalid_json` when it is not
    /// JSON at all, `validation_failed` naming the field when a field is missing, null, of the
    /// wrong type, or (for `KnownFields` bodies) not one the API knows; 415 when the client
    /// says the body is something other than JSON.
    public func decodeJSON<Body: Decodable>(_ type: Body.Type) throws(APIError) -> Body {
        if let contentType = request.headers["Content-Type"]?.lowercased(),
           !contentType.hasPrefix("application/json") {
            throw APIError(.unsupportedMediaType, code: .unsupportedMediaType, message: "send the body as application/json")
        }
        do {
            return try JSONBodyDecoder().decode(FieldsChecked<Body>.self, from: request.body).body
        } catch let error as UnknownField {
            throw APIError.invalid("\(error.name) is not a field of this request", error.name)
        } catch let error as DecodingError {
            throw Self.apiError(for: error)
        } catch {
            throw APIError(.badRequest, code: .invalidJSON, message: "the body is not valid JSON")
        }
    }

    static func apiError(for error: DecodingError) -> APIError {
        func field(_ path: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            (path + (last.map { [$0] } ?? [])).map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let name = field(context.codingPath, key)
            return APIError.invalid("\(name) is required", name)
        case .valueNotFound(_, let context):
            let name = field(context.codingPath)
            return APIError.invalid("\(name) must not be null", name)
        case .typeMismatch(let expected, let context):
            let name = field(context.codingPath)
            return APIError.invalid("\(name) must be \(describe(expected))", name)
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return APIError(.badRequest, code: .invalidJSON, message: "the body is not valid JSON")
        case .dataCorrupted(let context):
            let name = field(context.codingPath)
            return APIError.invalid("\(name) is not valid: \(context.debugDescription)", name)
        @unknown default:
            return APIError(.badRequest, code: .invalidJSON, message: "the body could not be read")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type: return "a whole number"
        case is Double.Type, is Float.Type: return "a number"
        default: return "of type \(type)"
        }
    }
}
