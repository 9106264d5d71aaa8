import Foundation

/// A response to write: status, headers and a complete body.
public struct HTTPResponse: Sendable, Equatable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// A body too long to hold at once: sent with `Transfer-Encoding: chunked`, one chunk per
    /// piece the source gives, each asked for only when the connection's queue has room.
    public var stream: ResponseStream?

    public init(status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response (`Content-Type: application/json; charset=utf-8`).
    public static func json(_ status: HTTPStatus, _ body: [UInt8], headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var headers = headers
        headers.replace("Content-Type", "application/json; charset=utf-8")
        return HTTPResponse(status: status, headers: headers, body: body)
    }

    /// A response whose body comes from `source`, piece by piece (`body` stays empty).
    /// With `length`, the body is sent as exactly that many bytes with `Content-Length` (the
    /// source must give exactly that many); without, chunked.
    public static func streamed(_ status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders(), length: Int? = nil,
                                _ source: any ResponseBodySource) -> HTTPResponse {
        var response = HTTPResponse(status: status, headers: headers)
        response.stream = ResponseStream(source, length: length)
        return response
    }

    /// The error response of API.md for `error`.
    public init(_ error: APIError) {
        self = .json(error.status, error.body, headers: error.headers)
    }
}

/// Where a streamed body comes from: each call the next piece, nil at the end. A throw ends the
/// response early (the connection closes, so the client sees a body cut short, never a
/// complete-looking one). Called one piece at a time, never concurrently.
public protocol ResponseBodySource: Sendable {
    func next() async throws -> [UInt8]?
}

/// A streamed body's source in a response (equal only to itself).
public struct ResponseStream: Sendable, Equatable {
    public let source: any ResponseBodySource
    /// The body's length when known in advance: sent as is, not chunked.
    public let length: Int?
    private let identity = UUID()

    public init(_ source: any ResponseBodySource, length: Int? = nil) {
        self.source = source
        self.length = length
    }

    public static func == (lhs: ResponseStream, rhs: ResponseStream) -> Bool { lhs.identity == rhs.identity }

    /// One chunk of a chunked body (RFC 9112 §7.1): size in hex, CRLF, data, CRLF.
    public static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        Array(String(bytes.count, radix: 16).utf8) + [ASCII.cr, ASCII.lf] + bytes + [ASCII.cr, ASCII.lf]
    }

    /// The last chunk and the empty trailer section.
    public static let end: [UInt8] = Array("0\r\n\r\n".utf8)
}

/// Serialises responses (RFC 9112 §4, §6): status line, the caller's headers, then
/// `Content-Length`, `Date` and `Connection` decided here so they are always right.
public enum HTTPResponseWriter {
    /// Appends the response to `buffer`. `includeBody` is false for HEAD: the length of the
    /// body that would have been sent is still announced (RFC 9110 §9.3.2).
    public static func write(
        _ response: HTTPResponse, keepAlive: Bool, date: String, includeBody: Bool = true, into buffer: inout [UInt8]
    ) {
        let status = response.status
        buffer.reserveCapacity(buffer.count + 160 + response.body.count)
        buffer.append(contentsOf: "HTTP/1.1 \(status.code) \(status.reason)\r\n".utf8)
        for (name, value) in response.headers where !isFramingHeader(name) {
            append(name, value, to: &buffer)
        }
        // 1xx, 204 and 304 carry no body and no Content-Length (RFC 9110 §8.6, §15.4.5); a streamed
        // body is chunked unless its length is known.
        let hasBody = status.code >= 200 && status.code != 204 && status.code != 304
        if hasBody {
            if let stream = response.stream {
                if let length = stream.length {
                    append("Content-Length", String(length), to: &buffer)
                } else {
                    append("Transfer-Encoding", "chunked", to: &buffer)
                }
            } else {
                append("Content-Length", String(response.body.count), to: &buffer)
            }
        }
        append("Date", date, to: &buffer)
        // A 101 names the protocol switch (RFC 9110 §7.8; RFC 6455 §4.2.2 requires it).
        append("Connection", status.code == 101 ? "Upgrade" : keepAlive ? "keep-alive" : "close", to: &buffer)
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
        if includeBody && hasBody {
            buffer.append(contentsOf: response.body)
        }
    }

    private static func isFramingHeader(_ name: String) -> Bool {
        HTTPHeaders.sameName(name, "Content-Length") || HTTPHeaders.sameName(name, "Date")
            || HTTPHeaders.sameName(name, "Transfer-Encoding")
            || (HTTPHeaders.sameName(name, "Connection"))
    }

    private static func append(_ name: String, _ value: String, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: name.utf8)
        buffer.append(ASCII.colon)
        buffer.append(ASCII.space)
        // A value is never allowed to end the header early: CR and LF are dropped.
        for byte in value.utf8 where byte != ASCII.cr && byte != ASCII.lf {
            buffer.append(byte)
        }
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
    }
}

/// The IMF-fixdate of RFC 9110 §5.6.7: `Sun, 06 Nov 1994 08:49:37 GMT`; with `zone: "+0000"`,
/// the same moment as an email's `Date` (RFC 5322 §3.3).
public enum HTTPDate {
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    public static func format(secondsSince1970 seconds: Int64, zone: String = "GMT") -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilCalendar.date(days: days)
        let weekday = Self.days[Int(((days % 7) + 7) % 7)]
        return "\(weekday), \(two(day)) \(months[Int(month - 1)]) \(year) \(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) \(zone)"
    }

    private static func two(_ value: Int64) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }
}
