import Foundation
import RoostTestSupport
import Testing
@testable import RoostProtocol

/// The gzip encoder's output is checked by an independent decoder (Python's zlib), byte for
/// byte, on text like the web app's and on inputs that reach every length and distance code.
@Suite struct GzipTests {
    /// What Python's `gzip.decompress` makes of `compressed`: the SHA-256 and length, or its error.
    static func decodedByPython(_ compressed: [UInt8]) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("roost-gzip-\(UUID().uuidString).gz")
        try Data(compressed).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let python = ProcessInfo.processInfo.environment["ROOST_TEST_PYTHON"] ?? "/usr/bin/python3"
        let script = "import gzip,hashlib,sys; d=gzip.decompress(open(sys.argv[1],'rb').read()); print(hashlib.sha256(d).hexdigest(), len(d))"
        return try Subprocess.run(python, ["-c", script, file.path]).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func expected(_ bytes: [UInt8]) -> String { "\(Digest.hex(Digest.sha256(bytes))) \(bytes.count)" }

    @Test(arguments: [
        ("empty", [UInt8]()),
        ("one byte", [0x41]),
        ("text", Array(String(repeating: "const button = h(\"button\", { type: \"button\" }, \"Seen\");\n", count: 400).utf8)),
        ("long runs", [UInt8](repeating: 0x20, count: 70_000) + [UInt8](repeating: 0x7A, count: 259)),
        ("far repeats", { () -> [UInt8] in
            var generator = SeededGenerator(seed: 7)
            let block = (0..<20_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
            return block + block + Array(block.prefix(5_000))  // matches at distances up to 32 KiB and beyond it
        }()),
        ("every byte", (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) }),
    ])
    func pythonDecodesExactlyTheInput(name: String, input: [UInt8]) throws {
        let compressed = Gzip.compress(input)
        #expect(Array(compressed.prefix(3)) == [0x1F, 0x8B, 8])
        #expect(try Self.decodedByPython(compressed) == Self.expected(input), "\(name)")
    }

    @Test func textShrinksToLessThanHalf() {
        let text = Array(String(repeating: "<p class=\"hint\">Press and hold for a second so an alert is never sent by accident.</p>\n", count: 50).utf8)
        #expect(Gzip.compress(text).count * 2 < text.count)
    }

    @Test func anEmptyInputIsTheShortestFixedBlock() {
        // BFINAL=1, BTYPE=01, then end-of-block (seven zero bits): 0x03 0x00, as zlib writes it.
        #expect(Array(Gzip.compress([]).dropFirst(10).prefix(2)) == [0x03, 0x00])
    }
}
