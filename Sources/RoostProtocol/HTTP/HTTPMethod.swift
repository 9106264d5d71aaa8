/// A request method token (RFC 9110 §9). An open set: any token parses; these are named.
public struct HTTPMethod: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let get = HTTPMethod("GET")
    public static let head = HTTPMethod("HEAD")
    public static let post = HTTPMethod("POST")
    public static let put = HTTPMethod("PUT")
    public static let patch = HTTPMethod("PATCH")
    public static let delete = HTTPMethod("DELETE")
    public static let options = HTTPMethod("OPTIONS")
}

/// HTTP/1.0 or HTTP/1.1: the only versions this server speaks (RFC 9112 §2.3).
public struct HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    public let major: Int
    public let minor: Int
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    public var description: String { "HTTP/\(major).\(minor)" }
}
