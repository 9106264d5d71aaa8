import Foundation
import Testing
@testable import RoostServer

/// The shipped `web/` holds to the app's rules without a build step to enforce them: small,
/// self-contained, every module it imports and every file its service worker caches present.
@Suite struct WebAppTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("web")

    static func text(_ file: WebApp.File) -> String { String(decoding: file.body, as: UTF8.self) }

    @Test func theWholeAppStaysUnder150KB() throws {
        let app = try WebApp(folder: Self.folder)
        let total = app.files.reduce(0) { $0 + $1.body.count }
        #expect(total < 150 * 1024, "web/ is \(total) bytes")
        #expect(Set(app.files.map(\.etag)).count == app.files.count)
    }

    @Test func everyModuleImportAndEveryCachedFileExists() throws {
        let app = try WebApp(folder: Self.folder)
        let paths = Set(app.files.map(\.path))
        let importPattern = try NSRegularExpression(pattern: #"(?:from |import\()\s*"(\.{1,2}/[^"]+)""#)
        for file in app.files where file.path.hasSuffix(".js") {
            let text = Self.text(file)
            let base = URL(fileURLWithPath: file.path).deletingLastPathComponent()
            for match in importPattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let relative = String(text[Range(match.range(at: 1), in: text)!])
                let target = base.appendingPathComponent(relative).standardizedFileURL.path
                #expect(paths.contains(target), "\(file.path) imports \(relative), which is not shipped")
            }
        }
        let worker = try #require(app.files.first { $0.path == "/sw.js" })
        let listed = try NSRegularExpression(pattern: #""(/[a-z0-9/._-]*)""#)
        let text = Self.text(worker)
        let cached = listed.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { String(text[Range($0.range(at: 1), in: text)!]) }
            .filter { $0 == "/" || $0.contains(".") }
        #expect(cached.count > 10)
        for path in cached where path != "/" {
            #expect(paths.contains(path), "sw.js caches \(path), which is not shipped")
        }
        // Every screen module is cached for offline use.
        for path in paths where path.hasPrefix("/js/") {
            #expect(cached.contains(path), "sw.js does not cache \(path)")
        }
    }

    @Test func theAppLoadsNothingFromElsewhereAndWritesNoMarkupFromStrings() throws {
        let app = try WebApp(folder: Self.folder)
        for file in app.files where file.path.hasSuffix(".js") || file.path.hasSuffix(".html") || file.path.hasSuffix(".css") {
            let text = Self.text(file)
            #expect(!text.contains("innerHTML") && !text.contains("eval("), "\(file.path) builds markup from strings")
            #expect(!text.contains("http://") && !text.contains("//cdn"), "\(file.path) loads from elsewhere")
        }
        let index = try #require(app.files.first { $0.path == "/index.html" })
        // No inline script: the Content-Security-Policy (default-src 'self') would refuse it.
        #expect(!Self.text(index).contains("<script>"))
        #expect(WebApp.contentSecurityPolicy.hasPrefix("default-src 'self'"))
    }

    @Test func aFolderWithoutIndexIsRefused() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("roost-web-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("body {}".utf8).write(to: folder.appendingPathComponent("app.css"))
        #expect(throws: (any Error).self) { try WebApp(folder: folder) }
    }
}
