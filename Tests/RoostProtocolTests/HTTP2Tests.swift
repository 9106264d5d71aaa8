@testable import RoostProtocol
import Testing

/// HPACK against RFC 7541's own examples, and the client session (`HTTP2ClientSession`) against
/// a server played frame by frame: responses, flow control both ways, CONTINUATION, PING,
/// RST_STREAM, GOAWAY, and the server's mistakes, each ending the way RFC 9113 says.
struct HTTP2Tests {
    static func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.filter { !$0.isWhitespace }.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }

    static func pairs(_ fields: [(name: String, value: String)]) -> [String] { fields.map { "\($0.name): \($0.value)" } }

    // MARK: HPACK

    @Test func theRFCsHuffmanResponsesDecodeWithEvictionAtTableSize256() throws {
        // RFC 7541 C.6: three responses on one connection, the table at 256 bytes, so the third evicts.
        var decoder = HPACK.Decoder(maxCapacity: 256)
        let first = try decoder.decode(Self.hex("""
            4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b
            97c8 e9ae 82ae 43d3
            """))
        #expect(Self.pairs(first) == [":status: 302", "cache-control: private", "date: Mon, 21 Oct 2013 20:13:21 GMT",
                                      "location: https://www.example.com"])
        let second = try decoder.decode(Self.hex("4883 640e ffc1 c0bf"))
        #expect(Self.pairs(second) == [":status: 307", "cache-control: private", "date: Mon, 21 Oct 2013 20:13:21 GMT",
                                       "location: https://www.example.com"])
        let third = try decoder.decode(Self.hex("""
            88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf
            cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07
            """))
        #expect(Self.pairs(third) == [":status: 200", "cache-control: private", "date: Mon, 21 Oct 2013 20:13:22 GMT",
                                      "location: https://www.example.com", "content-encoding: gzip",
                                      "set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"])
    }

    @Test func theRFCsPlainRequestsDecodeAndOurEncodingRoundTrips() throws {
        // RFC 7541 C.3.1 and C.3.2: literals with indexing, then a reference to the new entry.
        var decoder = HPACK.Decoder()
        #expect(Self.pairs(try decoder.decode(Self.hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d")))
                == [":method: GET", ":scheme: http", ":path: /", ":authority: www.example.com"])
        #expect(Self.pairs(try decoder.decode(Self.hex("8286 84be 5808 6e6f 2d63 6163 6865")))
                == [":method: GET", ":scheme: http", ":path: /", ":authority: www.example.com", "cache-control: no-cache"])
        // RFC 7541 C.1.2: 1337 in a 5-bit prefix.
        var block: [UInt8] = []
        HPACK.appendInteger(1337, prefix: 5, flags: 0, to: &block)
        #expect(block == [0x1f, 0x9a, 0x0a])

        let fields: [(name: String, value: String)] = [(":method", "POST"), (":scheme", "https"), (":authority", "push.example.net:8443"),
                                                       (":path", "/wpush/v2/gAAAA~1"), ("ttl", "21600"), ("urgency", "high"),
                                                       ("authorization", "vapid t=eyJ0eXAi, k=BEl6"), ("x-long", String(repeating: "é", count: 300))]
        let encoded = HPACK.encode(fields)
        #expect(encoded.starts(with: [0x83, 0x87]), "POST and https come from the static table")
        var fresh = HPACK.Decoder()
        #expect(Self.pairs(try fresh.decode(encoded)) == Self.pairs(fields))
    }

    @Test func brokenHeaderBlocksAreRefused() {
        var decoder = HPACK.Decoder(maxCapacity: 4096, maxListSize: 1000)
        let cases: [(String, [UInt8])] = [
            ("index 0", [0x80]),
            ("past the tables", [0xff, 0x00]),
            ("a string past the end", [0x00, 0x05, 0x61]),
            ("an integer that never ends", [0x1f, 0xff, 0xff, 0xff, 0xff, 0xff]),
            ("a size update above the setting", [0x3f, 0xe2, 0x1f]),
            ("a size update after a field", [0x82, 0x20]),
            // Huffman: 8 bits of padding, and padding that is not all ones.
            ("long padding", [0x00, 0x81, 0x1f, 0x82, 0x1f, 0xff]),
            ("zero padding", [0x00, 0x81, 0x1f, 0x81, 0x18]),
            ("not UTF-8", [0x00, 0x01, 0x61, 0x01, 0xff]),
            ("a list too large", [0x00, 0x01, 0x61, 0x7f, 0xe9, 0x06] + [UInt8](repeating: 0x62, count: 1000)),
        ]
        for (name, block) in cases {
            #expect(throws: HPACK.Failure.self, "\(name)") { try decoder.decode(block) }
        }
        // A good Huffman string with its padding: "a" is 00011, then 111 pads the octet.
        var good = HPACK.Decoder()
        #expect(Self.pairs((try? good.decode([0x00, 0x81, 0x1f, 0x81, 0x1f])) ?? []) == ["a: a"])
    }

    // MARK: The client session

    /// A server's side, for driving a session: frames, and header blocks from HPACK's encoder.
    struct Server {
        static func settings(_ values: [(HTTP2.Setting, Int)] = [], ack: Bool = false) -> [UInt8] {
            var payload: [UInt8] = []
            for (setting, value) in values {
                payload += [UInt8(setting.rawValue >> 8), UInt8(setting.rawValue & 0xff)] + word(UInt32(value))
            }
            return HTTP2.frame(.settings, flags: ack ? HTTP2.Flag.ack : 0, payload: payload)
        }

        static func word(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8((value >> 16) & 0xff), UInt8((value >> 8) & 0xff), UInt8(value & 0xff)] }

        static func headers(_ stream: UInt32, status: Int, _ more: [(name: String, value: String)] = [], endStream: Bool = true) -> [UInt8] {
            HTTP2.frame(.headers, flags: HTTP2.Flag.endHeaders | (endStream ? HTTP2.Flag.endStream : 0), stream: stream,
                        payload: HPACK.encode([(":status", String(status))] + more))
        }
    }

    /// A session past the handshake: the client's preface and settings taken, the server's given.
    static func started(_ settings: [(HTTP2.Setting, Int)] = [], _ session: HTTP2ClientSession.Settings = .init()) -> HTTP2ClientSession {
        var session = HTTP2ClientSession(settings: session)
        let hello = session.takeOutput()
        precondition(hello.starts(with: HTTP2.preface))
        _ = session.receive(Server.settings(settings))
        _ = session.takeOutput()
        return session
    }

    static func frames(_ bytes: [UInt8]) throws -> [HTTP2.Frame] {
        var reader = HTTP2.FrameReader(maxFrameSize: 1 << 24)
        reader.append(bytes)
        var frames: [HTTP2.Frame] = []
        while let frame = try reader.next() { frames.append(frame) }
        return frames
    }

    static let request: [(name: String, value: String)] = [(":method", "POST"), (":scheme", "https"), (":authority", "push.test"), (":path", "/p/1")]

    @Test func theClientOpensWithItsPrefaceAndSettingsAndAcknowledgesTheServers() throws {
        var session = HTTP2ClientSession()
        let hello = session.takeOutput()
        #expect(hello.starts(with: HTTP2.preface))
        let frames = try Self.frames(Array(hello.dropFirst(HTTP2.preface.count)))
        #expect(frames.first?.kind == .settings)
        // Server push is off, and the connection's window is raised.
        #expect(Array(frames[0].payload.prefix(6)) == [0, 2, 0, 0, 0, 0])
        #expect(frames.contains { $0.kind == .windowUpdate && $0.stream == 0 })
        let events = session.receive(Server.settings([(.maxConcurrentStreams, 2)]) + HTTP2.frame(.ping, payload: [1, 2, 3, 4, 5, 6, 7, 8]))
        #expect(events.isEmpty)
        let answers = try Self.frames(session.takeOutput())
        #expect(answers.map(\.kind) == [.settings, .ping])
        #expect(answers[0].has(HTTP2.Flag.ack) && answers[1].has(HTTP2.Flag.ack) && answers[1].payload == [1, 2, 3, 4, 5, 6, 7, 8])
        // The server's limit of two streams holds.
        #expect(session.open(Self.request, body: [1]) == 1 && session.open(Self.request, body: [2]) == 3)
        #expect(session.open(Self.request, body: [3]) == nil && !session.canOpen)
    }

    @Test func responsesComeBackByStreamWithTheirHeadersAndBody() throws {
        var session = Self.started()
        let firstOpened = session.open(Self.request + [("ttl", "60")], body: Array(repeating: 7, count: 100))
        let first = try #require(firstOpened)
        let secondOpened = session.open(Self.request, body: [])
        let second = try #require(secondOpened)
        let sent = try Self.frames(session.takeOutput())
        #expect(sent.map(\.kind) == [.headers, .headers, .data])
        #expect(sent[1].has(HTTP2.Flag.endStream), "a request without a body ends with its headers")
        #expect(sent[2].stream == first && sent[2].payload.count == 100 && sent[2].has(HTTP2.Flag.endStream))
        var decoder = HPACK.Decoder()
        #expect(Self.pairs(try decoder.decode(sent[0].payload)).contains("ttl: 60"))

        let events = session.receive(Server.headers(second, status: 429, [("retry-after", "30")])
                                     + Server.headers(first, status: 201, [("location", "/m/1")], endStream: false)
                                     + HTTP2.frame(.data, flags: HTTP2.Flag.endStream, stream: first, payload: Array("ok".utf8)))
        #expect(events == [.response(stream: second, .init(status: 429, headers: ["retry-after": "30"], body: [])),
                           .response(stream: first, .init(status: 201, headers: ["location": "/m/1"], body: Array("ok".utf8)))])
        #expect(session.openStreams == 0)
    }

    @Test func bodiesWaitForTheServersWindowAndLargeHeaderBlocksContinue() throws {
        var session = Self.started([(.initialWindowSize, 10), (.maxFrameSize, 16_384)])
        let streamOpened = session.open(Self.request + [("x-big", String(repeating: "v", count: 20_000))], body: Array(repeating: 1, count: 25))
        let stream = try #require(streamOpened)
        let sent = try Self.frames(session.takeOutput())
        #expect(sent.map(\.kind) == [.headers, .continuation, .data])
        #expect(!sent[0].has(HTTP2.Flag.endHeaders) && sent[1].has(HTTP2.Flag.endHeaders))
        #expect(sent[2].payload.count == 10 && !sent[2].has(HTTP2.Flag.endStream), "only the stream's window of 10 bytes")
        #expect(session.takeOutput().isEmpty)
        _ = session.receive(HTTP2.frame(.windowUpdate, stream: stream, payload: Server.word(100)))
        let rest = try Self.frames(session.takeOutput())
        #expect(rest.count == 1 && rest[0].payload.count == 15 && rest[0].has(HTTP2.Flag.endStream))

        // The server's header block across CONTINUATION, and a 100 Continue before the answer.
        let block = HPACK.encode([(":status", "201"), ("x-long", String(repeating: "w", count: 100))])
        let events = session.receive(Server.headers(stream, status: 100, endStream: false)
                                     + HTTP2.frame(.headers, stream: stream, payload: Array(block.prefix(50)))
                                     + HTTP2.frame(.continuation, flags: HTTP2.Flag.endHeaders, stream: stream, payload: Array(block.dropFirst(50)))
                                     + HTTP2.frame(.data, flags: HTTP2.Flag.endStream | HTTP2.Flag.padded, stream: stream, payload: [3, 0x41, 0, 0, 0]))
        #expect(events == [.response(stream: stream, .init(status: 201, headers: ["x-long": String(repeating: "w", count: 100)], body: [0x41]))])
    }

    @Test func aWindowTheServerShrankBelowZeroHoldsTheBodyUntilItIsPositiveAgain() throws {
        // Found by scripts/fuzz: the body was sliced with a negative size.
        var session = Self.started()
        let streamOpened = session.open(Self.request, body: Array(repeating: 5, count: 70_000))
        let stream = try #require(streamOpened)
        #expect(try Self.frames(session.takeOutput()).filter { $0.kind == .data }.map(\.payload.count) == [16_384, 16_384, 16_384, 16_383])
        _ = session.receive(Server.settings([(.initialWindowSize, 1000)]) + HTTP2.frame(.windowUpdate, payload: Server.word(100_000)))
        #expect(try Self.frames(session.takeOutput()).allSatisfy { $0.kind != .data }, "the stream's window is 1000 - 65535")
        _ = session.receive(HTTP2.frame(.windowUpdate, stream: stream, payload: Server.word(64_535 + 10)))
        #expect(try Self.frames(session.takeOutput()).filter { $0.kind == .data }.map(\.payload.count) == [10])
    }

    @Test func goAwayFailsOnlyTheStreamsTheServerDidNotTakeAndResetsFailTheirStream() throws {
        var session = Self.started()
        let streams = (0..<4).compactMap { _ in session.open(Self.request, body: [9]) }
        #expect(streams == [1, 3, 5, 7])
        var events = session.receive(HTTP2.frame(.resetStream, stream: 1, payload: Server.word(HTTP2.ErrorCode.refusedStream.rawValue)))
        #expect(events == [.streamFailed(stream: 1, reason: "the server reset the stream (REFUSED_STREAM)", unprocessed: true)])
        events = session.receive(HTTP2.frame(.goAway, payload: Server.word(3) + Server.word(0)))
        #expect(events.map(\.failedStream) == [5, 7] && events.allSatisfy(\.unprocessed))
        #expect(!session.canOpen && !session.isClosed, "stream 3 still finishes")
        events = session.receive(Server.headers(3, status: 201))
        #expect(events.count == 2 && events.last == .closed(reason: "the connection finished its last stream"))
        #expect(session.isClosed)
    }

    @Test func aServerThatBreaksTheProtocolEndsTheConnectionWithAGoAwaySayingWhy() throws {
        let broken: [(String, [UInt8], HTTP2.ErrorCode)] = [
            ("no SETTINGS first", HTTP2.frame(.ping, payload: [UInt8](repeating: 0, count: 8)), .protocolError),
            ("a frame above our maximum", Server.settings() + [0, 0x40, 0x01, 0, 0, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 16_385), .frameSizeError),
            ("a push promise", Server.settings() + HTTP2.frame(.pushPromise, flags: HTTP2.Flag.endHeaders, stream: 1, payload: Server.word(2)), .protocolError),
            ("a window past 2^31-1", Server.settings() + HTTP2.frame(.windowUpdate, payload: Server.word(0x7fff_ffff)), .flowControlError),
            ("a broken header block", Server.settings() + HTTP2.frame(.headers, flags: 5, stream: 1, payload: [0x80]), .compressionError),
            ("HEADERS on a stream never opened", Server.settings() + Server.headers(9, status: 200), .protocolError),
            ("an interrupted header block", Server.settings() + HTTP2.frame(.headers, stream: 1, payload: [0x88]) + HTTP2.frame(.ping, payload: [UInt8](repeating: 0, count: 8)), .protocolError),
            ("a bad frame size setting", Server.settings([(.maxFrameSize, 100)]), .protocolError),
        ]
        for (name, bytes, code) in broken {
            var session = HTTP2ClientSession()
            _ = session.takeOutput()
            let streamOpened = session.open(Self.request, body: [1])
            let stream = try #require(streamOpened)
            _ = session.takeOutput()
            let events = session.receive(bytes)
            #expect(events.first == .streamFailed(stream: stream, reason: events.first?.reason ?? "", unprocessed: false), "\(name)")
            #expect(session.isClosed, "\(name)")
            let goAway = try #require(try Self.frames(session.takeOutput()).last { $0.kind == .goAway }, "\(name)")
            #expect(Array(goAway.payload[4..<8]) == Server.word(code.rawValue), "\(name): \(String(decoding: goAway.payload.dropFirst(8), as: UTF8.self))")
            #expect(session.receive(Server.headers(stream, status: 200)).isEmpty, "a closed session hears nothing more")
        }
    }

    @Test func aStreamsOwnMistakeResetsItAndTheConnectionGoesOn() throws {
        var session = Self.started()
        let badOpened = session.open(Self.request, body: [1])
        let bad = try #require(badOpened)
        let goodOpened = session.open(Self.request, body: [2])
        let good = try #require(goodOpened)
        _ = session.takeOutput()
        var events = session.receive(HTTP2.frame(.headers, flags: HTTP2.Flag.endHeaders, stream: bad, payload: HPACK.encode([("x", "no status")])))
        #expect(events.map(\.failedStream) == [bad])
        let reset = try Self.frames(session.takeOutput())
        #expect(reset.map(\.kind) == [.resetStream] && reset[0].stream == bad)
        // A cancelled stream's late answer is decoded (the table stays in step) and dropped.
        session.cancel(good)
        events = session.receive(Server.headers(good, status: 201))
        #expect(events.isEmpty && !session.isClosed && session.canOpen)
    }
}

extension HTTP2ClientSession.Event {
    var failedStream: UInt32? {
        if case .streamFailed(let stream, _, _) = self { return stream }
        return nil
    }

    var unprocessed: Bool {
        if case .streamFailed(_, _, let unprocessed) = self { return unprocessed }
        return false
    }

    var reason: String? {
        if case .streamFailed(_, let reason, _) = self { return reason }
        return nil
    }
}
