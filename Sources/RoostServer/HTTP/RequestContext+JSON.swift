import Foundation
import RoostProtocol

extension RequestContext {
    /// The body decoded as JSON into `Body`, or the API's 400: `invalid_json` when it is not
    /// JSON at all, `validation_failed` naming the field when a field is missing, null or of
    /// the wrong type; 415 when the client says the body is something other than JSON.
    public func decodeJSON<Body: Decodable>(_ type: Body.Type) throws(APIError) -> Body {
        if let contentType = request.headers["Content-Type"]?.lowercased(),
           !contentType.hasPrefix("application/json") {
            throw APIError(.unsupportedMediaType, code: "unsupported_media_type", message: "send the body as application/json")
        }
        do {
            return try JSONDecoder().decode(Body.self, from: Data(request.body))
        } catch let error as DecodingError {
            throw Self.apiError(for: error)
        } catch {
            throw APIError(.badRequest, code: "invalid_json", message: "the body is not valid JSON")
        }
    }

    static func apiError(for error: DecodingError) -> APIError {
        func field(_ path: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            (path + (last.map { [$0] } ?? [])).map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let name = field(context.codingPath, key)
            return APIError(.badRequest, code: "validation_failed", message: "\(name) is required", field: name)
        case .valueNotFound(_, let context):
            let name = field(context.codingPath)
            return APIError(.badRequest, code: "validation_failed", message: "\(name) must not be null", field: name)
        case .typeMismatch(let expected, let context):
            let name = field(context.codingPath)
            return APIError(.badRequest, code: "validation_failed", message: "\(name) must be \(describe(expected))", field: name)
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return APIError(.badRequest, code: "invalid_json", message: "the body is not valid JSON")
        case .dataCorrupted(let context):
            let name = field(context.codingPath)
            return APIError(.badRequest, code: "validation_failed", message: "\(name) is not valid: \(context.debugDescription)", field: name)
        @unknown default:
            return APIError(.badRequest, code: "invalid_json", message: "the body could not be read")
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
