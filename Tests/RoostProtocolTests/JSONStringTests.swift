import Foundation
import RoostProtocol
import Testing

/// Hand-written JSON string literals must be what a JSON parser reads back as the same text.
struct JSONStringTests {
    @Test func escapesAreTheShortFormsAndLowerCaseHex() {
        #expect(JSONString.quote("") == #""""#)
        #expect(JSONString.quote("a\"b\\c") == #""a\"b\\c""#)
        #expect(JSONString.quote("line\nreturn\rtab\t") == #""line\nreturn\rtab\t""#)
        #expect(JSONString.quote("\u{0}\u{1}\u{1f}\u{7f}") == "\"\\u0000\\u0001\\u001f\u{7f}\"")
        #expect(JSONString.quote("x\u{2028}y\u{2029}z\u{2027}") == "\"x\\u2028y\\u2029z\u{2027}\"")
        #expect(JSONString.quote("Élise 👩🏽‍🚒 '; DROP TABLE") == "\"Élise 👩🏽‍🚒 '; DROP TABLE\"")
    }

    @Test func everyTextReadsBackAsItself() throws {
        // Each scalar class the escaper treats apart, near misses of U+2028 (U+2027 is E2 80 A7,
        // € is E2 82 AC), and plain ones of 1 to 4 UTF-8 bytes.
        let pieces = ["\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1b}", "\u{2028}", "\u{2029}", "\u{2027}", "a", "é", "€", "𝄞", "/"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let text = (0..<Int.random(in: 0...12, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            let quoted = JSONString.quote(text)
            let read = try JSONSerialization.jsonObject(with: Data(quoted.utf8), options: .fragmentsAllowed) as? String
            #expect(read == text, "\(quoted)")
        }
    }
}
