import Foundation
import RoostHTTP
import Testing
@testable import RoostServer

/// The shipped `web/` holds to the app's rules without a build step to enforce them: small,
/// self-contained, every module it imports and every file its service worker caches present.
@Suite struct WebAppTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("web")

    static func text(_ file: WebApp.File) -> String { String(decoding: file.body, as: UTF8.self) }

    /// What a browser fetches to have every screen (gzip where it is served so) stays under 90 KB,
    /// and the files themselves under 200 KB: the whole app, maps and all, costs a phone less than
    /// one photo.
    @Test func theWholeAppStaysSmall() throws {
        let app = try WebApp(folder: Self.folder)
        let total = app.files.reduce(0) { $0 + $1.body.count }
        let served = app.files.reduce(0) { $0 + ($1.gzipped ?? $1.body).count }
        #expect(total < 200 * 1024, "web/ is \(total) bytes")
        #expect(served < 90 * 1024, "web/ is \(served) bytes as served")
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
            // (SVG's namespace is a name, not an address: nothing is loaded from it.)
            let loadable = text.replacingOccurrences(of: "\"http://www.w3.org/2000/svg\"", with: "")
            #expect(!loadable.contains("http://") && !loadable.contains("//cdn"), "\(file.path) loads from elsewhere")
        }
        let index = try #require(app.files.first { $0.path == "/index.html" })
        // No inline script: the Content-Security-Policy (default-src 'self') would refuse it.
        #expect(!Self.text(index).contains("<script>"))
        #expect(app.contentSecurityPolicy == WebApp.contentSecurityPolicy(tiles: nil))
        #expect(app.contentSecurityPolicy.hasPrefix("default-src 'self'") && app.contentSecurityPolicy.contains("img-src 'self' blob: data:;"))
    }

    /// The map's tiles: the page may load images from the tile server's origin and from nowhere
    /// else, and learns the template and the credit from index.html; a template that could
    /// break the policy or the markup is refused at start.
    @Test func theMapsTileServerIsTheOneOtherImageOriginAndBadTemplatesAreRefused() throws {
        #expect(try MapTiles.from(ServerConfiguration()) == MapTiles.openStreetMap)
        var off = ServerConfiguration()
        off.mapTileURL = "off"
        #expect(try MapTiles.from(off) == nil)
        let local = try MapTiles.parse("http://127.0.0.1:8081/tiles/{z}/{x}/{y}.png?style=day", attribution: "Tiles © \"Town\" & <friends>")
        #expect(local.origin == "http://127.0.0.1:8081")
        let app = try WebApp(folder: Self.folder, tiles: local)
        #expect(app.contentSecurityPolicy.contains("img-src 'self' blob: data: http://127.0.0.1:8081;"))
        let index = Self.text(try #require(app.files.first { $0.path == "/index.html" }))
        #expect(index.contains(#"<meta name="roost-map-tiles" content="http://127.0.0.1:8081/tiles/{z}/{x}/{y}.png?style=day">"#))
        #expect(index.contains(#"<meta name="roost-map-attribution" content="Tiles © &quot;Town&quot; &amp; &lt;friends&gt;">"#))
        #expect(index.firstRange(of: "roost-map-tiles")!.lowerBound < index.firstRange(of: "</head>")!.lowerBound)
        #expect(try MapTiles.parse("https://[::1]:9000/{z}/{x}/{y}.png", attribution: nil).origin == "https://[::1]:9000")
        for bad in ["ftp://tiles.example.org/{z}/{x}/{y}.png", "https://tiles.example.org/{z}/{x}.png", "https://tiles.example.org/{z}/{x}/{y}/{y}.png",
                    "https://tiles.example.org/{z}/{x}/{y}.png; script-src *", "https://a.example.org/{z}/{x}/{y}.png https://evil.example",
                    "https://tiles.example.org/{z}/{x}/{y}.png\"><script>", "https://user:pw@tiles.example.org/{z}/{x}/{y}.png", "/{z}/{x}/{y}.png"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try MapTiles.parse(bad, attribution: nil) }
        }
        #expect(throws: ConfigurationError.self) { try MapTiles.parse(MapTiles.openStreetMap.template, attribution: "two\nlines") }
    }

    @Test func aFolderWithoutIndexIsRefused() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("roost-web-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("body {}".utf8).write(to: folder.appendingPathComponent("app.css"))
        #expect(throws: (any Error).self) { try WebApp(folder: folder) }
    }
}
