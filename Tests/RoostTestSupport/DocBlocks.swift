import Foundation

/// The shell blocks of README.md and docs/*.md. Each one says, in an HTML comment on the line
/// before its fence, whether a test runs it (`<!-- doc-block: NAME -->`, fetched by that test with
/// `DocBlocks.named`) or why it is not run (`<!-- not run: REASON -->`); `DocBlocksTests` holds
/// every block to one of the two.
public enum DocBlocks {
    public struct Block: Sendable {
        public let file: String
        public let line: Int
        /// The fence's language (`sh`, `bash`...).
        public let language: String
        public let marker: Marker
        /// The block's lines, without the fences.
        public let text: String
    }

    public enum Marker: Sendable, Equatable {
        case runs(String)
        case notRun(String)
        case none
    }

    /// The languages whose blocks are commands to paste.
    public static let shellLanguages: Set<String> = ["sh", "bash", "shell", "console"]

    /// The checkout's root (where README.md is).
    public static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// README.md and every docs/*.md, as paths under the root.
    public static func files() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return ["README.md"] + docs
    }

    /// Every fenced block of a shell language in the files.
    public static func all() throws -> [Block] {
        try files().flatMap { file in try blocks(in: file) }
    }

    static func blocks(in file: String) throws -> [Block] {
        let lines = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var found: [Block] = []
        var index = 0
        while index < lines.count {
            guard lines[index].hasPrefix("```") else { index += 1; continue }
            let language = String(lines[index].dropFirst(3)).trimmingCharacters(in: .whitespaces)
            let start = index
            index += 1
            var body: [String] = []
            while index < lines.count, !lines[index].hasPrefix("```") { body.append(lines[index]); index += 1 }
            index += 1
            guard shellLanguages.contains(language) else { continue }
            let before = start > 0 ? lines[start - 1].trimmingCharacters(in: .whitespaces) : ""
            found.append(Block(file: file, line: start + 1, language: language, marker: marker(before), text: body.joined(separator: "\n")))
        }
        return found
    }

    static func marker(_ line: String) -> Marker {
        guard line.hasPrefix("<!--"), line.hasSuffix("-->") else { return .none }
        let inside = line.dropFirst(4).dropLast(3).trimmingCharacters(in: .whitespaces)
        if inside.hasPrefix("doc-block:") {
            return .runs(inside.dropFirst("doc-block:".count).trimmingCharacters(in: .whitespaces))
        }
        if inside.hasPrefix("not run:") {
            return .notRun(inside.dropFirst("not run:".count).trimmingCharacters(in: .whitespaces))
        }
        return .none
    }

    /// The block marked `<!-- doc-block: NAME -->`.
    public static func named(_ name: String) throws -> String {
        let matches = try all().filter { $0.marker == .runs(name) }
        guard matches.count == 1 else { throw SubprocessError("\(matches.count) blocks are marked doc-block: \(name) (one expected)") }
        return matches[0].text
    }
}
