import RoostProtocol
import Testing

struct HTTPResponseWriterTests {
    @Test func aJSONResponseIsWrittenByteForByte() {
        var buffer: [UInt8] = []
        var headers = HTTPHeaders()
        headers.add("X-Request-Id", "r1")
        HTTPResponseWriter.write(
            .json(.created, Array("{}".utf8), headers: headers), keepAlive: true,
            date: "Sun, 06 Nov 1994 08:49:37 GMT", into: &buffer)
        let expected = "HTTP/1.1 201 Created\r\nX-Request-Id: r1\r\nContent-Type: application/json; charset=utf-8\r\n" +
            "Content-Length: 2\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nConnection: keep-alive\r\n\r\n{}"
        #expect(String(decoding: buffer, as: UTF8.self) == expected)
    }

    @Test func noContentHasNoLengthAndNoBody() {
        var buffer: [UInt8] = []
        HTTPResponseWriter.write(HTTPResponse(status: .noContent, body: [1, 2]), keepAlive: false, date: "D", into: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == "HTTP/1.1 204 No Content\r\nDate: D\r\nConnection: close\r\n\r\n")
    }

    @Test func headAnnouncesTheLengthWithoutTheBody() {
        var buffer: [UInt8] = []
        HTTPResponseWriter.write(HTTPResponse(status: .ok, body: [1, 2, 3]), keepAlive: true, date: "D", includeBody: false, into: &buffer)
        let text = String(decoding: buffer, as: UTF8.self)
        #expect(text.hasSuffix("Content-Length: 3\r\nDate: D\r\nConnection: keep-alive\r\n\r\n"))
    }

    @Test func framingHeadersAndLineBreaksFromCallersCannotBreakTheResponse() {
        var buffer: [UInt8] = []
        var headers = HTTPHeaders()
        headers.add("Content-Length", "999")
        headers.add("X-Evil", "a\r\nSet-Cookie: x=1")
        HTTPResponseWriter.write(HTTPResponse(status: .ok, headers: headers, body: [65]), keepAlive: true, date: "D", into: &buffer)
        let text = String(decoding: buffer, as: UTF8.self)
        #expect(!text.contains("999"))
        #expect(text.contains("X-Evil: aSet-Cookie: x=1\r\n"))
        #expect(text.components(separatedBy: "\r\n").filter { $0.hasPrefix("Set-Cookie") }.isEmpty)
    }

    @Test func theErrorBodyHasTheAPIShape() {
        let error = APIError(.badRequest, code: .validationFailed, message: "text is \"empty\"", field: "text")
        #expect(String(decoding: error.body, as: UTF8.self)
            == #"{"error":{"code":"validation_failed","message":"text is \"empty\"","field":"text"}}"#)
        let response = HTTPResponse(APIError(.tooManyRequests, code: .rateLimited, message: "slow down", headers: ["Retry-After": "3"]))
        #expect(response.status == .tooManyRequests)
        #expect(response.headers["Retry-After"] == "3")
        #expect(response.headers["Content-Type"] == "application/json; charset=utf-8")
    }

    @Test func everyParseErrorMapsToOneStatusAndAnAPIError() {
        let cases: [(HTTPParseError.Reason, Int, String)] = [
            (.requestLineTooLong, 414, "uri_too_long"), (.headersTooLarge, 431, "headers_too_large"),
            (.bodyTooLarge, 413, "payload_too_large"), (.unsupportedVersion, 505, "http_version_not_supported"),
            (.malformedHeader, 400, "bad_request"), (.contentLengthWithTransferEncoding, 400, "bad_request"),
        ]
        for (reason, status, code) in cases {
            let error = HTTPParseError(reason, "x")
            #expect(error.status.code == status)
            #expect(error.apiError.status.code == status)
            #expect(error.apiError.code.text == code)
        }
    }

    @Test func httpDatesAreIMFFixdate() {
        #expect(HTTPDate.format(secondsSince1970: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(secondsSince1970: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(secondsSince1970: 1_795_258_800) == "Sat, 21 Nov 2026 11:00:00 GMT")
    }
}
