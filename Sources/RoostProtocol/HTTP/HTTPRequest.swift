/// A complete request: head and body, framing already removed.
public struct HTTPRequest: Sendable, Equatable {
    public var method: HTTPMethod
    public var target: HTTPRequestTarget
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(method: HTTPMethod, target: HTTPRequestTarget, version: HTTPVersion, headers: HTTPHeaders, body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
    }

    /// Whether the connection stays open after the response (RFC 9112 §9.3): HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool {
        let tokens = headers.tokens("Connection")
        if tokens.contains("close") { return false }
        return version == .http1_1 || tokens.contains("keep-alive")
    }
}

/// The head of a request, as known when the header section ends (for per-route body limits).
public struct HTTPRequestHead: Sendable, Equatable {
    public var method: HTTPMethod
    public var target: HTTPRequestTarget
    public var version: HTTPVersion
    public var headers: HTTPHeaders
}
