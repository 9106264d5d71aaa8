import Foundation
import RoostProtocol
import Testing

/// The byte-level UUID text must agree with Foundation's, which it replaces on the hot paths.
struct UUIDTextTests {
    @Test func textIsFoundationsInLowerCaseAndReadsBackInEitherCase() {
        for _ in 0..<200 {
            let id = UUID()
            #expect(id.lowercasedText == id.uuidString.lowercased())
            #expect(UUID(text: id.lowercasedText) == id)
            #expect(UUID(text: id.uuidString) == id)
            #expect(UUID(text: Substring(id.uuidString)) == id)
        }
        let edges = [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                     UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255))]
        #expect(edges.map(\.lowercasedText) == ["00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"])
        #expect(edges.map { UUID(text: $0.lowercasedText) } == edges)
    }

    @Test(arguments: [
        "", "0", "00000000-0000-0000-0000-00000000000", "00000000-0000-0000-0000-0000000000000",
        "00000000000000000000000000000000", "00000000-0000-0000-0000_000000000000", "0000000-00000-0000-0000-000000000000",
        "g0000000-0000-0000-0000-000000000000", "{0000000-0000-0000-0000-000000000000}", "0000000é-0000-0000-0000-00000000000",
        "00000000-0000-0000-0000-00000000000\u{0}",
    ])
    func anythingElseIsNoUUIDAsFoundationSays(text: String) {
        #expect(UUID(text: text) == nil)
        #expect(UUID(uuidString: text) == nil)
    }

    /// Foundation's parser is `sscanf`, which skips leading blanks; an id with a blank in it is
    /// not an id the API wrote, so it is refused.
    @Test func aBlankBeforeTheDigitsIsRefused() {
        #expect(UUID(text: " 0000000-0000-0000-0000-000000000000") == nil)
        #expect(UUID(text: "\t0000000-0000-0000-0000-000000000000") == nil)
    }
}
