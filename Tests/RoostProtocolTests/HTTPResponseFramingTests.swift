import RoostProtocol
import Testing

/// Where a response ends on a kept connection (`HTTPResponseFraming`), byte by byte: by length, by
/// chunks, by the connection's end, past interim responses; and when the connection can carry
/// another request.
struct HTTPResponseFramingTests {
    let framing = HTTPResponseFraming()

    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Every prefix of `text` needs more; the whole is `expected`.
    func framesOnlyWhenWhole(_ text: String) -> HTTPResponseFraming.Step {
        let all = bytes(text)
        for end in 0..<all.count {
            let step = framing.step(Array(all[0..<end]), closed: false)
            if step != .needMore { return .malformed("complete early at \(end): \(step)") }
        }
        return framing.step(all, closed: false)
    }

    @Test func aLengthDelimitedResponseKeepsTheConnection() {
        let text = "HTTP/1.1 201 Created\r\nLocation: /p/1\r\nContent-Length: 5\r\n\r\nhello"
        #expect(framesOnlyWhenWhole(text) == .complete(.init(status: 201, headers: ["location": "/p/1", "content-length": "5"]),
                                                       consumed: text.utf8.count, keepAlive: true))
    }

    @Test func aChunkedBodyEndsAfterItsTrailers() {
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nabcd\r\n0\r\nTrailer: 1\r\n\r\n"
        guard case .complete(let response, let consumed, true) = framesOnlyWhenWhole(text) else {
            Issue.record("not framed")
            return
        }
        #expect(response.status == 200 && consumed == text.utf8.count)
        #expect(framing.step(bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), closed: false) == .malformed("bad chunk size zz"))
        #expect(framing.step(bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n"), closed: false)
                == .malformed("a chunk does not end in CRLF"))
    }

    @Test func interimResponsesArePassedOverAndNoBodyStatusesHaveNone() {
        let text = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"
        #expect(framesOnlyWhenWhole(text) == .complete(.init(status: 204, headers: [:]), consumed: text.utf8.count, keepAlive: true))
    }

    @Test func closeAndHTTP10AndAnUnframedBodyEndTheConnection() {
        let close = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        #expect(framing.step(bytes(close), closed: false) == .complete(.init(status: 200, headers: ["connection": "close", "content-length": "0"]),
                                                                       consumed: close.utf8.count, keepAlive: false))
        let old = "HTTP/1.0 201 Created\r\nContent-Length: 0\r\n\r\n"
        guard case .complete(_, _, false) = framing.step(bytes(old), closed: false) else {
            Issue.record("an HTTP/1.0 answer without keep-alive was kept")
            return
        }
        let unframed = "HTTP/1.1 200 OK\r\n\r\nsome body"
        #expect(framing.step(bytes(unframed), closed: false) == .needMore)
        guard case .complete(_, let consumed, false) = framing.step(bytes(unframed), closed: true) else {
            Issue.record("a body to the end of the connection was not framed")
            return
        }
        #expect(consumed == unframed.utf8.count)
    }

    @Test func truncatedOrMalformedResponsesAreRefused() {
        #expect(framing.step([], closed: true) == .malformed("no response"))
        #expect(framing.step(bytes("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc"), closed: true) == .malformed("the response ended inside its body"))
        #expect(framing.step(bytes("HTTP/1.1 2000 OK\r\n\r\n"), closed: false) == .malformed("malformed response head"))
        #expect(framing.step(bytes("SMTP 200 OK\r\n\r\n"), closed: false) == .malformed("malformed response head"))
        #expect(framing.step(bytes("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"), closed: false) == .malformed("bad Content-Length -1"))
        #expect(framing.step(bytes("HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello"), closed: false) == .malformed("bad Content-Length +5"))
        // Found by the fuzzer: a signed chunk size indexed before the chunk.
        for size in ["-3D1", "+4", "0x4"] {
            #expect(framing.step(bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nHTTP/in"), closed: false)
                    == .malformed("bad chunk size \(size)"))
        }
        #expect(framing.step(bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"), closed: false)
                == .malformed("transfer coding gzip is not supported"))
        #expect(framing.step(bytes("HTTP/1.1 200 OK\r\n" + String(repeating: "X: y\r\n", count: 4000)), closed: false)
                == .malformed("response headers over 16 KiB"))
    }
}
