import Foundation
import RoostProtocol
import Testing

struct SecretsTests {
    /// RFC 4231 test case 2.
    @Test func hmacSHA256MatchesTheRFCVector() {
        let mac = Secrets.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(Digest.hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func randomBytesDiffer() {
        let a = Secrets.randomBytes(32), b = Secrets.randomBytes(32)
        #expect(a.count == 32)
        #expect(a != b)
    }

    @Test func randomDigitsAreDigitsOfTheLengthAskedAndEveryDigitTurnsUp() {
        for count in [1, 6, 8, 9] {
            let codes = (0..<200).map { _ in Secrets.randomDigits(count) }
            #expect(codes.allSatisfy { $0.count == count && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) })
        }
        let seen = Set((0..<500).map { _ in Secrets.randomDigits(1) })
        #expect(seen.count == 10, "\(seen.sorted())")
    }

    @Test func constantTimeEqualityCompares() {
        #expect(Secrets.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!Secrets.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!Secrets.constantTimeEqual([1, 2, 3], [1, 2]))
        #expect(Secrets.constantTimeEqual([], []))
    }

    @Test func base64URLRoundTripsWithoutPadding() {
        for length in 0..<40 {
            let bytes = Secrets.randomBytes(length)
            let text = Secrets.base64URL(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Secrets.decodeBase64URL(text) == bytes)
        }
        #expect(Secrets.decodeBase64URL("not base64!") == nil)
        #expect(Secrets.decodeBase64URL("a+b/") == nil)
        #expect(Secrets.decodeBase64URL("AAAA=") == nil)
        // One character over a whole group holds no byte: no encoder writes it.
        #expect(Secrets.decodeBase64URL("AAAAA") == nil)
        #expect(Secrets.decodeBase64URL("") == [])
    }

    /// The codec is written over bytes; Foundation's standard base64, rewritten to the URL
    /// alphabet without padding, is the reference it must agree with both ways.
    @Test func base64URLAgreesWithFoundationsBase64() {
        func reference(_ bytes: [UInt8]) -> String {
            String(Data(bytes).base64EncodedString().map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 }.filter { $0 != "=" })
        }
        for length in 0..<70 {
            // Every byte value appears across the lengths, in both the groups and the tail.
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ length &* 11) } + Secrets.randomBytes(length % 5)
            #expect(Secrets.base64URL(bytes) == reference(bytes))
            #expect(Secrets.decodeBase64URL(reference(bytes)) == bytes)
        }
        #expect(Secrets.base64URL(Array(0...255)) == reference(Array(0...255)))
    }
}
