import RoostProtocol
import Testing

/// RFC 6455 §5.7 and §4.2.2, byte for byte.
struct WebSocketRFCExampleTests {
    static let maskedHello: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
    static let key = WebSocketMasking.key(0x37, 0xFA, 0x21, 0x3D)

    @Test func theHandshakeExampleAcceptValue() {
        #expect(WebSocketHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func aSingleFrameUnmaskedTextMessage() {
        let bytes: [UInt8] = [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]
        #expect(readAll(bytes, role: .client).messages == [.text("Hello")])
        #expect(WebSocketFrameEncoder.text("Hello") == bytes)
    }

    @Test func aSingleFrameMaskedTextMessage() {
        #expect(readAll(Self.maskedHello).messages == [.text("Hello")])
        #expect(WebSocketFrameEncoder.text("Hello", maskKey: Self.key) == Self.maskedHello)
    }

    @Test func aFragmentedUnmaskedTextMessage() {
        let bytes: [UInt8] = [0x01, 0x03, 0x48, 0x65, 0x6C, 0x80, 0x02, 0x6C, 0x6F]
        #expect(readAll(bytes, role: .client).messages == [.text("Hello")])
        var encoded: [UInt8] = []
        WebSocketFrameEncoder.encode(.text, payload: Array("Hel".utf8), fin: false, into: &encoded)
        WebSocketFrameEncoder.encode(.continuation, payload: Array("lo".utf8), into: &encoded)
        #expect(encoded == bytes)
    }

    @Test func anUnmaskedPingAndAMaskedPong() {
        let ping: [UInt8] = [0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]
        #expect(readAll(ping, role: .client).messages == [.ping(Array("Hello".utf8))])
        var encoded: [UInt8] = []
        WebSocketFrameEncoder.encode(.ping, payload: Array("Hello".utf8), into: &encoded)
        #expect(encoded == ping)

        let pong: [UInt8] = [0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        #expect(readAll(pong).messages == [.pong(Array("Hello".utf8))])
    }

    @Test func binaryOf256BytesAndOf64KiBUseTheLongerLengths() {
        let small = [UInt8](repeating: 0xAB, count: 256)
        var encoded: [UInt8] = []
        WebSocketFrameEncoder.encode(.binary, payload: small, into: &encoded)
        #expect(Array(encoded.prefix(4)) == [0x82, 0x7E, 0x01, 0x00])
        #expect(readAll(encoded, role: .client).messages == [.binary(small)])

        let large = [UInt8](repeating: 0xCD, count: 65_536)
        encoded = []
        WebSocketFrameEncoder.encode(.binary, payload: large, into: &encoded)
        #expect(Array(encoded.prefix(10)) == [0x82, 0x7F, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00])
        #expect(readAll(encoded, role: .client).messages == [.binary(large)])
    }
}
