/// The one JSON error shape of API.md: `{"error": {"code", "message", "field"?}}`, with its
/// status. Every error response of the server is built here.
public struct APIError: Error, Hashable, Sendable {
    public let status: HTTPStatus
    public let code: String
    public let message: String
    public let field: String?
    /// Extra response headers (`Retry-After`, `Allow`, `Sec-WebSocket-Version`).
    public var headers: HTTPHeaders
    /// Numbers the client acts on, beside the message in the error object (410's `oldest_seq`).
    public var details: [String: Int64] = [:]

    public init(_ status: HTTPStatus, code: String, message: String, field: String? = nil, headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers
    }

    /// 400 `validation_failed` naming the field at fault.
    public static func invalid(_ message: String, _ field: String) -> APIError {
        APIError(.badRequest, code: "validation_failed", message: message, field: field)
    }

    /// The response body, UTF-8 JSON.
    public var body: [UInt8] {
        var json = "{\"error\":{\"code\":\(JSONString.quote(code)),\"message\":\(JSONString.quote(message))"
        if let field { json += ",\"field\":\(JSONString.quote(field))" }
        for (key, value) in details.sorted(by: { $0.key < $1.key }) { json += ",\(JSONString.quote(key)):\(value)" }
        json += "}}"
        return Array(json.utf8)
    }

    public static func == (lhs: APIError, rhs: APIError) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.message == rhs.message && lhs.field == rhs.field
            && lhs.headers == rhs.headers && lhs.details == rhs.details
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(status)
        hasher.combine(code)
        hasher.combine(message)
        hasher.combine(field)
    }
}
