/// A request target in origin form (RFC 9112 §3.2.1), percent-decoded per path segment so
/// that an encoded `/` stays inside its segment; `.` and `..` segments are refused.
public struct HTTPRequestTarget: Sendable, Equatable {
    /// The target as sent, undecoded.
    public let raw: String
    /// The decoded segments of the path: `/v1/groups/x` is `["v1", "groups", "x"]`.
    public let pathSegments: [String]
    /// Decoded `name=value` pairs of the query, in order; `+` is a space.
    public let query: [(name: String, value: String)]

    /// The decoded path, segments joined with `/` (for logs; route on `pathSegments`).
    public var path: String { "/" + pathSegments.joined(separator: "/") }

    /// The first value of a query parameter.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    public static func == (lhs: HTTPRequestTarget, rhs: HTTPRequestTarget) -> Bool {
        lhs.raw == rhs.raw
    }

    /// Parses origin form (`/path?query`), absolute form (`http://host/path?query`, whose
    /// authority is dropped) and the asterisk form of `OPTIONS *`.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(HTTPParseError) -> HTTPRequestTarget {
        let raw = String(decoding: bytes, as: UTF8.self)
        var bytes = bytes
        if bytes.count == 1 && bytes.first == UInt8(ascii: "*") {
            return HTTPRequestTarget(raw: raw, pathSegments: ["*"], query: [])
        }
        if bytes.first != UInt8(ascii: "/") {
            // Absolute form: scheme "://" authority path.
            guard let schemeEnd = find(Array("://".utf8), in: bytes),
                  bytes[bytes.startIndex..<schemeEnd].allSatisfy({ isSchemeByte($0) }) else {
                throw HTTPParseError(.invalidTarget, "the request target must start with /")
            }
            let afterAuthority = bytes[(schemeEnd + 3)...].firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") })
            bytes = afterAuthority.map { bytes[$0...] } ?? []
            if bytes.first != UInt8(ascii: "/") { bytes = [UInt8(ascii: "/")] + bytes }
        }
        for byte in bytes where byte <= 32 || byte == 127 || byte == UInt8(ascii: "#") {
            throw HTTPParseError(.invalidTarget, "the request target has a character that must be percent-encoded")
        }
        let questionMark = bytes.firstIndex(of: UInt8(ascii: "?"))
        let pathBytes = bytes[bytes.startIndex..<(questionMark ?? bytes.endIndex)]
        let queryBytes = questionMark.map { bytes[($0 + 1)...] } ?? []

        var segments: [String] = []
        var segmentStart = pathBytes.startIndex + 1
        while segmentStart <= pathBytes.endIndex {
            let segmentEnd = pathBytes[segmentStart...].firstIndex(of: UInt8(ascii: "/")) ?? pathBytes.endIndex
            let decoded = try percentDecode(pathBytes[segmentStart..<segmentEnd], plusIsSpace: false)
            if decoded == "." || decoded == ".." {
                throw HTTPParseError(.invalidTarget, "the request path may not contain . or .. segments")
            }
            segments.append(decoded)
            segmentStart = segmentEnd + 1
        }
        // "/" alone is the root: no segments rather than one empty one.
        if segments.count == 1 && segments[0].isEmpty { segments = [] }

        var query: [(String, String)] = []
        var pairStart = queryBytes.startIndex
        while pairStart < queryBytes.endIndex {
            let pairEnd = queryBytes[pairStart...].firstIndex(of: UInt8(ascii: "&")) ?? queryBytes.endIndex
            let pair = queryBytes[pairStart..<pairEnd]
            pairStart = pairEnd + 1
            if pair.isEmpty { continue }
            let equals = pair.firstIndex(of: UInt8(ascii: "="))
            let name = try percentDecode(pair[pair.startIndex..<(equals ?? pair.endIndex)], plusIsSpace: true)
            var value = ""
            if let equals { value = try percentDecode(pair[(equals + 1)...], plusIsSpace: true) }
            query.append((name, value))
        }
        return HTTPRequestTarget(raw: raw, pathSegments: segments, query: query)
    }

    private init(raw: String, pathSegments: [String], query: [(name: String, value: String)]) {
        self.raw = raw
        self.pathSegments = pathSegments
        self.query = query
    }

    /// `%XX` decoding; the result must be UTF-8 without NUL.
    static func percentDecode(_ bytes: ArraySlice<UInt8>, plusIsSpace: Bool) throws(HTTPParseError) -> String {
        guard bytes.contains(UInt8(ascii: "%")) || (plusIsSpace && bytes.contains(UInt8(ascii: "+"))) else {
            return String(decoding: bytes, as: UTF8.self)
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex,
                      let high = ASCII.hexValue(bytes[index + 1]), let low = ASCII.hexValue(bytes[index + 2]) else {
                    throw HTTPParseError(.invalidTarget, "the request target has a malformed percent-encoding")
                }
                let decoded = high << 4 | low
                guard decoded != 0 else { throw HTTPParseError(.invalidTarget, "the request target encodes a NUL byte") }
                out.append(decoded)
                index += 3
            } else {
                out.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        guard let text = String(validating: out, as: UTF8.self) else {
            throw HTTPParseError(.invalidTarget, "the request target does not decode to UTF-8")
        }
        return text
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        (byte >= 97 && byte <= 122) || (byte >= 65 && byte <= 90) || (byte >= 48 && byte <= 57)
            || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }

    private static func find(_ needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in haystack.startIndex...(haystack.endIndex - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }
}
