import RoostProtocol
import Testing

/// Feeds `bytes` in pieces of `chunk` bytes and collects everything the parser yields.
func parseAll(_ bytes: [UInt8], chunk: Int = Int.max, limits: HTTPRequestParser.Limits = .init()) -> [HTTPRequestParser.Next] {
    var parser = HTTPRequestParser(limits: limits)
    var results: [HTTPRequestParser.Next] = []
    var index = 0
    repeat {
        let end = min(bytes.count, index + max(1, min(chunk, bytes.count)))
        parser.feed(bytes[index..<end])
        index = end
        loop: while true {
            let next = parser.next()
            switch next {
            case .needMore: break loop
            case .request, .streamStart, .bodyEnd: results.append(next)
            case .bodyPart(let part):
                // Pieces arrive as the bytes do: consecutive ones are one body, whatever the feeding.
                if case .bodyPart(let earlier)? = results.last { results[results.count - 1] = .bodyPart(earlier + part) } else { results.append(next) }
            case .failure:
                results.append(next)
                return results
            }
        }
    } while index < bytes.count
    return results
}

func request(_ text: String) -> [UInt8] { Array(text.utf8) }

func failure(_ results: [HTTPRequestParser.Next]) -> HTTPParseError? {
    if case .failure(let error) = results.last { return error }
    return nil
}

func requests(_ results: [HTTPRequestParser.Next]) -> [HTTPRequest] {
    results.compactMap { if case .request(let request) = $0 { return request } else { return nil } }
}

struct HTTPRequestParserTests {
    static var streamingUploads: HTTPRequestParser.Limits {
        var limits = HTTPRequestParser.Limits()
        limits.streamsBody = { $0.target.path == "/v1/media" }
        limits.bodyLimit = { $0.target.path == "/v1/media" ? 100 : 64 * 1024 }
        return limits
    }

    @Test(arguments: [1, 2, 5, Int.max])
    func aStreamingBodyComesInPiecesBetweenItsHeadAndItsEndAndTheNextRequestFollows(chunk: Int) {
        let body = String(repeating: "0123456789", count: 9)
        let input = request("POST /v1/media HTTP/1.1\r\nContent-Length: 90\r\n\r\n\(body)"
                            + "POST /v1/media HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 1\r\n\r\n"
                            + "POST /v1/media HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
                            + "GET /healthz HTTP/1.1\r\n\r\n")
        let results = parseAll(input, chunk: chunk, limits: Self.streamingUploads)
        #expect(results.count == 9, "\(results)")
        guard results.count == 9 else { return }
        if case .streamStart(let head) = results[0] { #expect(head.body.isEmpty && head.target.path == "/v1/media") } else { Issue.record("\(results[0])") }
        #expect(results[1] == .bodyPart(Array(body.utf8)) && results[2] == .bodyEnd)
        #expect(results[4] == .bodyPart(Array("hello world".utf8)) && results[5] == .bodyEnd)
        if case .streamStart = results[6] {} else { Issue.record("\(results[6])") }
        #expect(results[7] == .bodyEnd)
        #expect(requests([results[8]]).first?.target.path == "/healthz")
    }

    @Test func aStreamingBodyOverItsLimitFailsBeforeItsBytesWhenDeclaredAndAtTheChunkThatCrossesIt() {
        let declared = parseAll(request("POST /v1/media HTTP/1.1\r\nContent-Length: 101\r\n\r\n"), limits: Self.streamingUploads)
        #expect(failure(declared)?.reason == .bodyTooLarge && declared.count == 1)
        let chunked = parseAll(request("POST /v1/media HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n\(String(repeating: "a", count: 64))\r\n40\r\n"),
                               limits: Self.streamingUploads)
        #expect(chunked.count == 3 && failure(chunked)?.reason == .bodyTooLarge)
    }
    @Test func aTypicalRequestParsesIntoItsParts() throws {
        let parsed = requests(parseAll(request(
            "POST /v1/groups/g%201/messages?limit=20&q=a+b%26c HTTP/1.1\r\nHost: roost\r\nContent-Type: application/json\r\n" +
            "X-Tag: one\r\nx-tag:  two \r\nContent-Length: 13\r\n\r\n{\"text\":\"hi\"}")))
        #expect(parsed.count == 1)
        let first = try #require(parsed.first)
        #expect(first.method == .post)
        #expect(first.target.pathSegments == ["v1", "groups", "g 1", "messages"])
        #expect(first.target.queryValue("limit") == "20")
        #expect(first.target.queryValue("q") == "a b&c")
        #expect(first.version == .http1_1)
        #expect(first.headers["content-type"] == "application/json")
        #expect(first.headers.values("X-TAG") == ["one", "two"])
        #expect(first.body == Array("{\"text\":\"hi\"}".utf8))
        #expect(first.keepAlive)
    }

    static let corpus: [String] = [
        "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        "POST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
        "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n",
        "\r\nGET /after-empty-line HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        "DELETE /v1/x HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
    ]

    @Test func byteAtATimeGivesTheSameRequestsAsAllAtOnce() {
        let all = request(Self.corpus.joined())
        let whole = parseAll(all)
        #expect(requests(whole).count == Self.corpus.count)
        for chunk in [1, 2, 3, 7, 64] {
            #expect(parseAll(all, chunk: chunk) == whole, "chunk size \(chunk)")
        }
    }

    @Test func pipelinedRequestsComeOutInOrder() {
        let paths = (0..<20).map { "/r\($0)" }
        let bytes = request(paths.map { "GET \($0) HTTP/1.1\r\n\r\n" }.joined())
        #expect(requests(parseAll(bytes)).map(\.target.path) == paths)
    }

    @Test func keepAliveDefaultsFollowTheVersion() {
        func keepAlive(_ text: String) -> Bool? { requests(parseAll(request(text))).first?.keepAlive }
        #expect(keepAlive("GET / HTTP/1.1\r\n\r\n") == true)
        #expect(keepAlive("GET / HTTP/1.1\r\nConnection: close\r\n\r\n") == false)
        #expect(keepAlive("GET / HTTP/1.0\r\n\r\n") == false)
        #expect(keepAlive("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n") == true)
    }

    @Test func chunkedBodiesAreDecodedAndTrailersDropped() throws {
        let parsed = try #require(requests(parseAll(request(Self.corpus[2]))).first)
        #expect(parsed.body == Array("hello0123456789".utf8))
        #expect(!parsed.headers.contains("Trailer"))
    }

    @Test(arguments: [
        ("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", HTTPParseError.Reason.contentLengthWithTransferEncoding),
        ("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", .conflictingContentLength),
        ("POST / HTTP/1.1\r\nContent-Length: 3, 4\r\n\r\n", .conflictingContentLength),
        ("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", .invalidContentLength),
        ("POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", .invalidContentLength),
        ("POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n", .invalidContentLength),
        ("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", .invalidContentLength),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", .unsupportedTransferEncoding),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", .unsupportedTransferEncoding),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", .unsupportedTransferEncoding),
        ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", .unsupportedTransferEncoding),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", .malformedChunk),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", .malformedChunk),
    ])
    func smugglingShapesAreRefusedWith400(text: String, reason: HTTPParseError.Reason) throws {
        let error = try #require(failure(parseAll(request(text))))
        #expect(error.reason == reason)
        #expect(error.status == .badRequest)
    }

    @Test func identicalRepeatedContentLengthsAreAccepted() throws {
        let parsed = try #require(requests(parseAll(request("POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok"))).first)
        #expect(parsed.body == Array("ok".utf8))
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", HTTPParseError.Reason.obsoleteLineFolding),
        ("GET / HTTP/1.1\r\nHost : a\r\n\r\n", .malformedHeader),
        ("GET / HTTP/1.1\r\n: a\r\n\r\n", .malformedHeader),
        ("GET / HTTP/1.1\r\nNo colon\r\n\r\n", .malformedHeader),
        ("GET / HTTP/1.1\r\nX: a\u{1}b\r\n\r\n", .malformedHeader),
        ("GET / HTTP/1.1\nHost: a\r\n\r\n", .bareLineFeed),
        ("GET /a/../b HTTP/1.1\r\n\r\n", .invalidTarget),
        ("GET /a/%2e%2E/b HTTP/1.1\r\n\r\n", .invalidTarget),
        ("GET /a/%zz HTTP/1.1\r\n\r\n", .invalidTarget),
        ("GET /a/%00 HTTP/1.1\r\n\r\n", .invalidTarget),
        ("GET /a/%ff HTTP/1.1\r\n\r\n", .invalidTarget),
        ("GET relative HTTP/1.1\r\n\r\n", .invalidTarget),
        ("GET / HTTP/1.1 extra\r\n\r\n", .malformedRequestLine),
        ("GET  / HTTP/1.1\r\n\r\n", .malformedRequestLine),
        ("G(T / HTTP/1.1\r\n\r\n", .invalidMethod),
        ("GET / HTTX/1.1\r\n\r\n", .malformedRequestLine),
        ("GET / HTTP/2.0\r\n\r\n", .unsupportedVersion),
        ("GET / HTTP/0.9\r\n\r\n", .unsupportedVersion),
    ])
    func malformedRequestsAreTypedErrors(text: String, reason: HTTPParseError.Reason) throws {
        let error = try #require(failure(parseAll(request(text))))
        #expect(error.reason == reason)
        #expect(error.status == (reason == .unsupportedVersion ? .httpVersionNotSupported : .badRequest))
    }

    @Test func anEncodedSlashStaysInsideItsSegment() throws {
        let parsed = try #require(requests(parseAll(request("GET /files/a%2Fb/x HTTP/1.1\r\n\r\n"))).first)
        #expect(parsed.target.pathSegments == ["files", "a/b", "x"])
    }

    @Test func absoluteFormKeepsOnlyThePath() throws {
        let parsed = try #require(requests(parseAll(request("GET http://roost.example:8080/v1/me?x=1 HTTP/1.1\r\n\r\n"))).first)
        #expect(parsed.target.pathSegments == ["v1", "me"])
        #expect(parsed.target.queryValue("x") == "1")
    }

    @Test func anOverlongRequestLineFailsBeforeItEnds() throws {
        var parser = HTTPRequestParser()
        parser.feed(request("GET /" + String(repeating: "a", count: 8 * 1024)))
        guard case .failure(let error) = parser.next() else { Issue.record("no failure"); return }
        #expect(error.status == .uriTooLong)
    }

    @Test func aRequestLineAtTheLimitIsAccepted() {
        let target = "/" + String(repeating: "a", count: 8 * 1024 - "GET  HTTP/1.1".utf8.count - 1)
        let line = "GET \(target) HTTP/1.1"
        #expect(line.utf8.count == 8 * 1024)
        #expect(requests(parseAll(request(line + "\r\n\r\n"))).count == 1)
    }

    @Test func headersOverTheLimitFailWith431BeforeTheyEnd() throws {
        var parser = HTTPRequestParser()
        parser.feed(request("GET / HTTP/1.1\r\n"))
        for index in 0..<200 { parser.feed(request("X-Filler-\(index): \(String(repeating: "v", count: 90))\r\n")) }
        guard case .failure(let error) = parser.next() else { Issue.record("no failure"); return }
        #expect(error.status == .headersTooLarge)
        #expect(error.apiError.code.text == "headers_too_large")
    }

    /// Found by the fuzzer: with the header section one byte short of full, a following line
    /// ending in a bare LF was reported as 400 when fed whole but 431 when trickled in.
    @Test func aFullHeaderSectionFailsWith431HoweverTheBytesArrive() {
        var limits = HTTPRequestParser.Limits()
        limits.maxHeaderBytes = 20
        let bytes = request("GET / HTTP/1.1\r\nA: 123456789012345\r\nx\n")
        let whole = parseAll(bytes, limits: limits)
        #expect(failure(whole)?.status == .headersTooLarge)
        #expect(parseAll(bytes, chunk: 1, limits: limits) == whole)
    }

    @Test func aBodyOverTheLimitFailsWith413BeforeAnyBodyByte() throws {
        var limits = HTTPRequestParser.Limits()
        limits.maxBodyBytes = 10
        var parser = HTTPRequestParser(limits: limits)
        parser.feed(request("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n"))
        guard case .failure(let error) = parser.next() else { Issue.record("no failure"); return }
        #expect(error.status == .payloadTooLarge)
        let huge = failure(parseAll(request("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n")))
        #expect(huge?.status == .payloadTooLarge)
    }

    @Test func aChunkedBodyOverTheLimitFailsAtTheChunkThatBreaksIt() {
        var limits = HTTPRequestParser.Limits()
        limits.maxBodyBytes = 8
        let results = parseAll(request("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n5\r\n"), limits: limits)
        #expect(failure(results)?.status == .payloadTooLarge)
    }

    @Test func theBodyLimitCanDependOnTheRoute() {
        var limits = HTTPRequestParser.Limits()
        limits.bodyLimit = { head in head.target.pathSegments.first == "big" ? 100 : 4 }
        #expect(requests(parseAll(request("POST /big HTTP/1.1\r\nContent-Length: 50\r\n\r\n" + String(repeating: "x", count: 50)), limits: limits)).count == 1)
        #expect(failure(parseAll(request("POST /small HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"), limits: limits))?.status == .payloadTooLarge)
    }

    @Test func aFailureIsStickyAndIgnoresLaterBytes() {
        var parser = HTTPRequestParser()
        parser.feed(request("BROKEN\r\n"))
        #expect(failure([parser.next()]) != nil)
        parser.feed(request("GET / HTTP/1.1\r\n\r\n"))
        #expect(failure([parser.next()]) != nil)
    }

    @Test func anIdleParserGivesBackItsBufferAndStillParses() {
        var parser = HTTPRequestParser()
        parser.feed(request("GET /a HTTP/1.1\r\n\r\n"))
        guard case .request = parser.next() else { Issue.record("no request"); return }
        parser.releaseIdleBuffers()
        #expect(parser.bufferedByteCount == 0)
        parser.feed(request("GET /b HTTP/1.1\r\n\r\n"))
        guard case .request(let second) = parser.next() else { Issue.record("no second request"); return }
        #expect(second.target.path == "/b")
        // A partly received request is kept.
        parser.feed(request("GET /c HT"))
        #expect(parser.next() == .needMore)
        parser.releaseIdleBuffers()
        parser.feed(request("TP/1.1\r\n\r\n"))
        guard case .request(let third) = parser.next() else { Issue.record("lost a partial request"); return }
        #expect(third.target.path == "/c")
    }

    @Test func bytesAfterARequestCanBeTakenForAnUpgrade() {
        var parser = HTTPRequestParser()
        parser.feed(request("GET /v1/stream HTTP/1.1\r\nUpgrade: websocket\r\n\r\n") + [0x81, 0x80])
        guard case .request = parser.next() else { Issue.record("no request"); return }
        #expect(parser.takeRemainingBytes() == [0x81, 0x80])
        #expect(parser.isIdle)
    }
}
