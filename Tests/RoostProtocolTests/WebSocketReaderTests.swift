import RoostProtocol
import Testing

/// One test per Autobahn|Testsuite case group (1–7, 9), expressed as reader inputs and the
/// outcome the suite expects, plus the framing rules they rest on.
struct WebSocketReaderTests {
    // MARK: Group 1 — framing

    @Test(arguments: [0, 1, 125, 126, 127, 128, 65_535, 65_536])
    func group1TextAndBinaryOfEveryLengthFormRoundTrip(length: Int) {
        let text = String(repeating: "*", count: length)
        let binary = [UInt8](repeating: 0xFE, count: length)
        let bytes = clientFrame(.text, Array(text.utf8)) + clientFrame(.binary, binary)
        for chunk in [Int.max, 997, 1] where !(chunk == 1 && length > 1000) {
            let result = readAll(bytes, chunk: chunk, maxMessageBytes: 70_000)
            #expect(result.failure == nil)
            #expect(result.messages == [.text(text), .binary(binary)], "length \(length), chunk \(chunk)")
        }
    }

    // MARK: Group 2 — pings and pongs

    @Test func group2PingsAndPongsUpTo125BytesAreDelivered() {
        let payloads: [[UInt8]] = [[], Array("Hello, world!".utf8), [0x00, 0xFF, 0xFE, 0xFD, 0xFC], [UInt8](repeating: 0xFE, count: 125)]
        for payload in payloads {
            #expect(readAll(clientFrame(.ping, payload)).messages == [.ping(payload)])
        }
        // An unsolicited pong is fine; ten pings in a row all come out.
        #expect(readAll(clientFrame(.pong, Array("x".utf8))).messages == [.pong(Array("x".utf8))])
        let ten = (0..<10).flatMap { _ in clientFrame(.ping, Array("p".utf8)) }
        #expect(readAll(ten, chunk: 3).messages.count == 10)
    }

    @Test func group2APingOver125BytesIsAProtocolError() {
        let bytes = rawFrame(firstByte: 0x89, payload: [UInt8](repeating: 1, count: 126), lengthBytes: [0, 126])
        #expect(readAll(bytes).failure?.closeCode == .protocolError)
    }

    // MARK: Group 3 — reserved bits

    @Test(arguments: [0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70] as [UInt8])
    func group3AnyReservedBitFailsTheConnection(bits: UInt8) {
        for opcode: UInt8 in [0x1, 0x2, 0x9] {
            let result = readAll(clientFrame(.text, Array("ok".utf8)) + rawFrame(firstByte: 0x80 | bits | opcode, payload: []))
            #expect(result.messages == [.text("ok")])
            #expect(result.failure?.closeCode == .protocolError)
        }
    }

    // MARK: Group 4 — opcodes

    @Test(arguments: [0x3, 0x4, 0x5, 0x6, 0x7, 0xB, 0xC, 0xD, 0xE, 0xF] as [UInt8])
    func group4ReservedOpcodesFailTheConnection(opcode: UInt8) {
        let result = readAll(clientFrame(.text, Array("ok".utf8)) + rawFrame(firstByte: 0x80 | opcode, payload: [1, 2]))
        #expect(result.messages == [.text("ok")])
        #expect(result.failure?.closeCode == .protocolError)
    }

    // MARK: Group 5 — fragmentation

    @Test func group5FragmentsReassembleWithControlFramesBetweenThem() {
        let bytes = clientFrame(.text, Array("frag".utf8), fin: false) + clientFrame(.ping, Array("in between".utf8))
            + clientFrame(.continuation, Array("men".utf8), fin: false) + clientFrame(.pong, [])
            + clientFrame(.continuation, Array("t".utf8))
        for chunk in [Int.max, 1, 5] {
            let result = readAll(bytes, chunk: chunk)
            #expect(result.failure == nil)
            #expect(result.messages == [.ping(Array("in between".utf8)), .pong([]), .text("fragment")])
        }
    }

    @Test func group5EmptyFragmentsAreAllowed() {
        let bytes = clientFrame(.text, [], fin: false) + clientFrame(.continuation, Array("a".utf8), fin: false)
            + clientFrame(.continuation, [])
        #expect(readAll(bytes).messages == [.text("a")])
    }

    @Test func group5AFragmentedControlFrameFails() {
        #expect(readAll(clientFrame(.ping, Array("x".utf8), fin: false)).failure?.closeCode == .protocolError)
    }

    @Test func group5AContinuationWithoutAStartFails() {
        #expect(readAll(clientFrame(.continuation, Array("x".utf8))).failure?.closeCode == .protocolError)
        #expect(readAll(clientFrame(.continuation, Array("x".utf8), fin: false)).failure?.closeCode == .protocolError)
        // Also right after a complete message.
        let after = readAll(clientFrame(.text, Array("done".utf8)) + clientFrame(.continuation, Array("x".utf8)))
        #expect(after.messages == [.text("done")])
        #expect(after.failure?.closeCode == .protocolError)
    }

    @Test func group5ANewDataFrameInsideAFragmentedMessageFails() {
        let bytes = clientFrame(.text, Array("a".utf8), fin: false) + clientFrame(.text, Array("b".utf8))
        #expect(readAll(bytes).failure?.closeCode == .protocolError)
        let binary = clientFrame(.binary, [1], fin: false) + clientFrame(.binary, [2], fin: false)
        #expect(readAll(binary).failure?.closeCode == .protocolError)
    }

    // MARK: Group 6 — UTF-8

    @Test func group6ValidUTF8IsAcceptedWhereverFragmentsSplitIt() {
        let text = "κόσμε · Hello-µ@ßöäüàá-UTF-8!! · 𝄞 · \u{10FFFF} · \u{FEFF}"
        let bytes = Array(text.utf8)
        for split in 1..<bytes.count {
            let frames = clientFrame(.text, Array(bytes[..<split]), fin: false) + clientFrame(.continuation, Array(bytes[split...]))
            #expect(readAll(frames).messages == [.text(text)], "split at \(split)")
        }
        #expect(readAll(clientFrame(.text, bytes), chunk: 1).messages == [.text(text)])
    }

    static let invalidUTF8: [[UInt8]] = [
        [0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5, 0xED, 0xA0, 0x80, 0x65, 0x64, 0x69, 0x74, 0x65, 0x64],
        [0x80], [0xBF], [0xC0, 0xAF], [0xC1, 0xBF], [0xE0, 0x80, 0xAF], [0xF0, 0x80, 0x80, 0xAF],  // stray, overlong
        [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF],  // surrogates
        [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFE], [0xFF],  // beyond U+10FFFF, never valid
        [0xC2, 0x41], [0xE1, 0x80, 0x41],  // a sequence cut short by ASCII
    ]

    @Test(arguments: invalidUTF8)
    func group6InvalidUTF8Fails1007(bytes: [UInt8]) {
        #expect(readAll(clientFrame(.text, bytes)).failure?.closeCode == .invalidPayload)
        #expect(readAll(clientFrame(.text, bytes), chunk: 1).failure?.closeCode == .invalidPayload)
        // In fragments too.
        let frames = clientFrame(.text, Array(bytes.prefix(1)), fin: false) + clientFrame(.continuation, Array(bytes.dropFirst()))
        #expect(readAll(frames).failure?.closeCode == .invalidPayload)
    }

    @Test func group6AMessageEndingInsideASequenceFails1007() {
        #expect(readAll(clientFrame(.text, [0x41, 0xE2, 0x82])).failure?.closeCode == .invalidPayload)
    }

    @Test func group6InvalidUTF8FailsFastBeforeTheFrameIsComplete() {
        // The frame announces 1000 bytes; an invalid byte comes at position 10 and the rest never arrives.
        var reader = WebSocketReader()
        let payload = [UInt8](repeating: 0x41, count: 10) + [0xFF] + [UInt8](repeating: 0x41, count: 989)
        let frame = clientFrame(.text, payload)
        reader.feed(frame.prefix(4 + 4 + 20))
        #expect(reader.next() == .failure(WebSocketProtocolError(.invalidPayload, "text message is not valid UTF-8")))
    }

    @Test func group6InvalidUTF8FailsFastInAnUnfinishedFragmentedMessage() {
        let result = readAll(clientFrame(.text, [0x41], fin: false) + clientFrame(.continuation, [0xED, 0xA0], fin: false))
        #expect(result.failure?.closeCode == .invalidPayload)
    }

    // MARK: Group 7 — close

    @Test func group7AnEmptyCloseOrACodeWithAReasonIsAccepted() {
        #expect(readAll(clientFrame(.close, [])).messages == [.close(code: nil, reason: "")])
        #expect(readAll(clientFrame(.close, [0x03, 0xE8] + Array("bye 👋".utf8))).messages
            == [.close(code: .normal, reason: "bye 👋")])
        let longest = [0x03, 0xE8] + [UInt8](repeating: 0x2A, count: 123)
        #expect(readAll(clientFrame(.close, longest)).failure == nil)
    }

    @Test func group7ACloseWithOneBytePayloadFails() {
        #expect(readAll(clientFrame(.close, [0x03])).failure?.closeCode == .protocolError)
    }

    @Test(arguments: [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4999] as [UInt16])
    func group7ValidCloseCodesAreAccepted(code: UInt16) {
        let result = readAll(clientFrame(.close, [UInt8(code >> 8), UInt8(code & 0xFF)]))
        #expect(result.messages == [.close(code: WebSocketCloseCode(rawValue: code), reason: "")])
    }

    @Test(arguments: [0, 999, 1004, 1005, 1006, 1012, 1013, 1014, 1015, 1016, 1100, 2000, 2999, 5000, 65_535] as [UInt16])
    func group7InvalidCloseCodesFail1002(code: UInt16) {
        #expect(readAll(clientFrame(.close, [UInt8(code >> 8), UInt8(code & 0xFF)])).failure?.closeCode == .protocolError)
    }

    @Test func group7ACloseReasonThatIsNotUTF8Fails1007() {
        #expect(readAll(clientFrame(.close, [0x03, 0xE8, 0xCE, 0xBA, 0xED, 0xA0, 0x80])).failure?.closeCode == .invalidPayload)
    }

    @Test func group7ACloseLongerThan125BytesFails() {
        let bytes = rawFrame(firstByte: 0x88, payload: [0x03, 0xE8] + [UInt8](repeating: 0x2A, count: 124), lengthBytes: [0, 126])
        #expect(readAll(bytes).failure?.closeCode == .protocolError)
    }

    // MARK: Group 9 — limits and large messages

    @Test(arguments: [64, 256, 1024, 4096, 65_536])
    func group9MessagesUpToTheLimitPassInAnyFragmentSize(fragment: Int) {
        let limit = 64 * 1024
        let payload = (0..<limit).map { UInt8(0x41 + $0 % 26) }
        var bytes: [UInt8] = []
        var offset = 0
        while offset < payload.count {
            let end = min(payload.count, offset + fragment)
            bytes += clientFrame(offset == 0 ? .text : .continuation, Array(payload[offset..<end]), fin: end == payload.count)
            offset = end
        }
        let result = readAll(bytes, chunk: 4093, maxMessageBytes: limit)
        #expect(result.failure == nil)
        #expect(result.messages == [.text(String(decoding: payload, as: UTF8.self))])
    }

    @Test func group9AMessageOverTheLimitFails1009FromTheHeaderAlone() {
        var reader = WebSocketReader(maxMessageBytes: 1000)
        // Only the header of a 1001-byte frame: the reader must refuse without the payload.
        reader.feed(clientFrame(.binary, [UInt8](repeating: 0, count: 1001)).prefix(8))
        guard case .failure(let error) = reader.next() else { Issue.record("no failure"); return }
        #expect(error.closeCode == .messageTooBig)
        // Across fragments: the second fragment's header reveals the total.
        let fragments = clientFrame(.text, [UInt8](repeating: 0x41, count: 600), fin: false)
            + clientFrame(.continuation, [UInt8](repeating: 0x41, count: 401)).prefix(8)
        #expect(readAll(Array(fragments), maxMessageBytes: 1000).failure?.closeCode == .messageTooBig)
        // A 2^63-ish length is refused the same way, not overflowed.
        let absurd = [0x82, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF] as [UInt8]
        #expect(readAll(absurd).failure?.closeCode == .messageTooBig)
    }

    // MARK: Framing rules

    @Test func anUnmaskedClientFrameFails() {
        #expect(readAll(rawFrame(firstByte: 0x81, payload: Array("hi".utf8), masked: false)).failure?.closeCode == .protocolError)
        // And a client rejects a masked server frame.
        #expect(readAll(clientFrame(.text, Array("hi".utf8)), role: .client).failure?.closeCode == .protocolError)
    }

    @Test func nonMinimalLengthsAndTheTopBitAreRefused() {
        let short16 = rawFrame(firstByte: 0x82, payload: [1, 2, 3], lengthBytes: [0, 3])
        #expect(readAll(short16).failure?.closeCode == .protocolError)
        let short64 = rawFrame(firstByte: 0x82, payload: [1], lengthBytes: [0, 0, 0, 0, 0, 0, 0, 1])
        #expect(readAll(short64).failure?.closeCode == .protocolError)
        let topBit = [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0] as [UInt8]
        #expect(readAll(topBit).failure?.closeCode == .protocolError)
    }

    @Test func aFailureIsSticky() {
        var reader = WebSocketReader()
        reader.feed(rawFrame(firstByte: 0x83, payload: []))
        guard case .failure = reader.next() else { Issue.record("no failure"); return }
        reader.feed(clientFrame(.text, Array("later".utf8)))
        guard case .failure = reader.next() else { Issue.record("recovered after a failure"); return }
    }

    // MARK: Idleness (a connection drops an idle reader and makes a new one)

    @Test func aReaderIsIdleOnlyBetweenWholeMessages() {
        var reader = WebSocketReader()
        #expect(reader.isIdle)
        let first = clientFrame(.text, Array("he".utf8), fin: false), second = clientFrame(.continuation, Array("llo".utf8))
        let ping = clientFrame(.ping, [1])
        // A header's first byte, a whole fragment, a ping between fragments: each leaves something pending.
        reader.feed(first.prefix(1))
        #expect(reader.next() == .needMore && !reader.isIdle, "part of a header")
        reader.feed(first.dropFirst())
        #expect(reader.next() == .needMore && !reader.isIdle, "a fragment of a message")
        reader.feed(ping + second.prefix(3))
        #expect(reader.next() == .message(.ping([1])))
        #expect(reader.next() == .needMore && !reader.isIdle, "part of the last fragment")
        reader.feed(second.dropFirst(3))
        #expect(reader.next() == .message(.text("hello")))
        #expect(reader.next() == .needMore && reader.isIdle, "the message is whole")
        // A new reader then reads what follows as the old one would have.
        var fresh = WebSocketReader()
        fresh.feed(clientFrame(.text, Array("é".utf8)))
        #expect(fresh.next() == .message(.text("é")))
    }
}
