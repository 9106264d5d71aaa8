/// The one JSON error shape of API.md: `{"error": {"code", "message", "field"?}}`, with its
/// status. Every error response of the server is built here.
public struct APIError: Error, Hashable, Sendable {
    public let status: HTTPStatus
    public let code: Code
    public let message: String
    public let field: String?
    /// Extra response headers (`Retry-After`, `Allow`, `Sec-WebSocket-Version`).
    public var headers: HTTPHeaders
    /// Numbers the client acts on, beside the message in the error object (410's `oldest_seq`).
    public var details: [String: Int64] = [:]

    public init(_ status: HTTPStatus, code: Code, message: String, field: String? = nil, headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers
    }

    /// 400 `validation_failed` naming the field at fault.
    public static func invalid(_ message: String, _ field: String) -> APIError {
        APIError(.badRequest, code: .validationFailed, message: message, field: field)
    }

    /// The response body, UTF-8 JSON.
    public var body: [UInt8] {
        var json = "{\"error\":{\"code\":\(JSONString.quote(code.text)),\"message\":\(JSONString.quote(message))"
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

extension APIError {
    /// API.md's error codes ("Errors"), the `code` a client acts on: an open set, so a new code
    /// is one line here, and no code is written as a string anywhere else.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let text: String

        private init(_ text: String) { self.text = text }

        public var description: String { text }

        public static let badRequest = Code("bad_request")
        public static let conflict = Code("conflict")
        public static let expired = Code("expired")
        public static let forbidden = Code("forbidden")
        public static let headersTooLarge = Code("headers_too_large")
        public static let httpVersionNotSupported = Code("http_version_not_supported")
        public static let `internal` = Code("internal")
        public static let invalidJSON = Code("invalid_json")
        public static let invalidRequest = Code("invalid_request")
        public static let methodNotAllowed = Code("method_not_allowed")
        /// A manager muted the caller in this group (API.md "Moderation and tenant administration").
        public static let muted = Code("muted")
        public static let notFound = Code("not_found")
        public static let passwordRequired = Code("password_required")
        public static let payloadTooLarge = Code("payload_too_large")
        public static let pinRequired = Code("pin_required")
        public static let quotaExceeded = Code("quota_exceeded")
        public static let rangeNotSatisfiable = Code("range_not_satisfiable")
        public static let rateLimited = Code("rate_limited")
        /// The operator suspended the account.
        public static let suspended = Code("suspended")
        public static let timeout = Code("timeout")
        public static let unauthenticated = Code("unauthenticated")
        public static let unavailable = Code("unavailable")
        public static let unknownType = Code("unknown_type")
        public static let unsupportedMediaType = Code("unsupported_media_type")
        public static let unsupportedWebSocketVersion = Code("unsupported_websocket_version")
        public static let upgradeRequired = Code("upgrade_required")
        public static let uriTooLong = Code("uri_too_long")
        public static let validationFailed = Code("validation_failed")
        public static let wrongPassword = Code("wrong_password")
        public static let wrongPIN = Code("wrong_pin")
    }
}
