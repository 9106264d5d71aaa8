import RoostProtocol
import Testing

struct WebSocketPropertyTests {
    /// Random valid messages, fragmented at random with pings between fragments, fed in random
    /// chunk sizes, come out identical and in order.
    @Test(arguments: 1...25 as ClosedRange<UInt64>)
    func randomFragmentationAndChunkingPreserveMessages(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let alphabet = Array("aZ09 ,.!\nçøæ€𝄞日本🚨".unicodeScalars)
        var expected: [WebSocketMessage] = []
        var bytes: [UInt8] = []
        for _ in 0..<Int.random(in: 1...12, using: &random) {
            let isText = Bool.random(using: &random)
            let length = Int.random(in: 0...3000, using: &random)
            let payload: [UInt8]
            if isText {
                var text = String.UnicodeScalarView()
                while text.count < length / 2 { text.append(alphabet.randomElement(using: &random)!) }
                payload = Array(String(text).utf8)
                expected.append(.text(String(text)))
            } else {
                payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
                expected.append(.binary(payload))
            }
            // Split at arbitrary byte positions (also inside UTF-8 sequences).
            var cuts = (0..<Int.random(in: 0...4, using: &random)).map { _ in Int.random(in: 0...payload.count, using: &random) }
            cuts = ([0] + cuts.sorted() + [payload.count])
            for index in 0..<(cuts.count - 1) {
                let piece = Array(payload[cuts[index]..<cuts[index + 1]])
                let opcode: WebSocketOpcode = index == 0 ? (isText ? .text : .binary) : .continuation
                let key = UInt32.random(in: 0...UInt32.max, using: &random)
                bytes += clientFrame(opcode, piece, fin: index == cuts.count - 2, key: key)
                if Bool.random(using: &random) && index < cuts.count - 2 {
                    let ping = (0..<Int.random(in: 0...125, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                    bytes += clientFrame(.ping, ping, key: key)
                }
            }
        }

        var reader = WebSocketReader(maxMessageBytes: 1 << 20)
        var received: [WebSocketMessage] = []
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + Int.random(in: 1...700, using: &random))
            reader.feed(bytes[offset..<end])
            offset = end
            while case .message(let message) = reader.next() {
                if case .ping = message { continue }
                received.append(message)
            }
        }
        #expect(reader.next() == .needMore)
        #expect(received == expected)
    }

    @Test(arguments: 0..<8)
    func maskingAtAnyOffsetMatchesTheByteByByteDefinition(offset: Int) {
        var random = SeededGenerator(seed: UInt64(offset) + 99)
        let key = UInt32.random(in: 0...UInt32.max, using: &random)
        let keyBytes = (0..<4).map { UInt8(truncatingIfNeeded: key >> UInt32($0 * 8)) }
        for length in [0, 1, 3, 7, 8, 9, 31, 64, 1001] {
            let original = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            var fast = original
            fast.withUnsafeMutableBytes { WebSocketMasking.apply(key: key, offset: offset, to: $0) }
            let reference = original.enumerated().map { $0.element ^ keyBytes[($0.offset + offset) % 4] }
            #expect(fast == reference, "length \(length) offset \(offset)")
        }
    }

    /// The validator agrees with the standard library on random byte strings, fed whole or in pieces.
    @Test(arguments: 1...10 as ClosedRange<UInt64>)
    func utf8ValidationAgreesWithTheStandardLibrary(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let interesting: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 0x9F, 0xA0, 0x8F, 0x90]
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0...12, using: &random)).map { _ in interesting.randomElement(using: &random)! }
            let truth = String(validating: bytes, as: UTF8.self) != nil
            var whole = UTF8Validator()
            #expect((whole.validate(bytes) && whole.isComplete) == truth, "\(bytes)")
            var pieces = UTF8Validator()
            var ok = true
            for byte in bytes where ok { ok = pieces.validate([byte]) }
            #expect((ok && pieces.isComplete) == truth, "\(bytes) byte by byte")
        }
    }

    @Test func theEncoderPicksTheShortestLengthForm() {
        for (length, header) in [(125, [0x82, 125]), (126, [0x82, 126, 0, 126]), (65_535, [0x82, 126, 0xFF, 0xFF]),
                                 (65_536, [0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0])] as [(Int, [UInt8])] {
            var buffer: [UInt8] = []
            WebSocketFrameEncoder.encode(.binary, payload: [UInt8](repeating: 7, count: length), into: &buffer)
            #expect(Array(buffer.prefix(header.count)) == header)
            #expect(buffer.count == header.count + length)
        }
    }

    @Test func aCloseFrameReasonIsCutOnACharacterBoundary() {
        let frame = WebSocketFrameEncoder.close(.goingAway, reason: String(repeating: "é", count: 100))
        #expect(frame.count <= 127)
        let result = readAll(frame, role: .client)
        guard case .close(let code, let reason) = result.messages.first else { Issue.record("no close"); return }
        #expect(code == .goingAway)
        #expect(reason == String(repeating: "é", count: 61))
    }
}
