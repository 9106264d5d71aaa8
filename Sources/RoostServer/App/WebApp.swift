import Foundation
import RoostHTTP
import RoostProtocol

/// The web app of `web/`, read once at start and answered from memory on the event loop
/// (a few dozen small files): `ETag` from the bytes, `Cache-Control: no-cache` so a browser
/// revalidates (a 304 costs one round trip and no body; there is no build step to put
/// hashes in names), gzip made once at start for the text files (`Vary: Accept-Encoding`),
/// and a Content-Security-Policy that lets the page load nothing but its own origin (and map
/// tiles from the one origin `ROOST_MAP_TILE_URL` names).
struct WebApp: Sendable {
    struct File: Sendable {
        let path: String
        let body: [UInt8]
        let contentType: String
        let etag: String
        /// The body gzip-compressed, when that saves at least a tenth (text; not the PNGs).
        let gzipped: [UInt8]?
    }

    /// What the app may load: its own scripts, styles, images (and the `blob:` previews of a
    /// photo about to be sent), its own API and stream; never a frame, a plugin or a form
    /// posted elsewhere.
    /// With `tiles`, images from the tile server's origin too.
    static func contentSecurityPolicy(tiles: MapTiles?) -> String {
        [
            "default-src 'self'", "img-src 'self' blob: data:" + (tiles.map { " " + $0.origin } ?? ""), "connect-src 'self'", "object-src 'none'",
            "base-uri 'none'", "frame-ancestors 'none'", "form-action 'self'",
        ].joined(separator: "; ")
    }

    /// Paths the app's own router shows (a link in an invitation email is `/join?token=…`):
    /// each answers with `index.html`.
    static let appEntryPaths = ["/", "/join", "/reset"]

    let files: [File]
    let contentSecurityPolicy: String

    /// Reads every file under `folder` (hidden files and unknown types left out); `index.html`
    /// gets the map's tile template and attribution as `<meta name="roost-map-tiles">` and
    /// `<meta name="roost-map-attribution">` (none: `tiles` nil, no map).
    init(folder: URL, tiles: MapTiles? = nil) throws {
        let manager = FileManager.default
        guard let walker = manager.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey],
                                              options: [.skipsHiddenFiles]) else {
            throw ConfigurationError("the web app's folder \(folder.path) cannot be read")
        }
        var files: [File] = []
        let root = folder.standardizedFileURL.path
        for case let url as URL in walker {
            guard (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true,
                  let type = Self.contentTypes[url.pathExtension.lowercased()] else { continue }
            let relative = String(url.standardizedFileURL.path.dropFirst(root.count))
            var body = Array(try Data(contentsOf: url))
            if relative == "/index.html" || relative == "index.html", let tiles {
                body = Self.withMap(body, tiles)
            }
            let digest = Digest.hex(Array(Digest.sha256(body).prefix(12)))
            let compressed = Self.compressible(type) ? Gzip.compress(body) : nil
            files.append(File(path: relative.hasPrefix("/") ? relative : "/" + relative, body: body, contentType: type, etag: "\"\(digest)\"",
                              gzipped: compressed.flatMap { $0.count * 10 <= body.count * 9 ? $0 : nil }))
        }
        guard files.contains(where: { $0.path == "/index.html" }) else {
            throw ConfigurationError("the web app's folder \(folder.path) has no index.html")
        }
        self.files = files.sorted { $0.path < $1.path }
        contentSecurityPolicy = Self.contentSecurityPolicy(tiles: tiles)
    }

    /// `index.html` with the map's two `<meta>` elements before `</head>`.
    static func withMap(_ page: [UInt8], _ tiles: MapTiles) -> [UInt8] {
        func attribute(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
                .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        }
        let html = String(decoding: page, as: UTF8.self)
        let meta = "<meta name=\"roost-map-tiles\" content=\"\(attribute(tiles.template))\">\n"
            + "  <meta name=\"roost-map-attribution\" content=\"\(attribute(tiles.attribution))\">\n"
        guard let head = html.range(of: "</head>") else { return page }
        return Array((html[..<head.lowerBound] + "  " + meta + html[head.lowerBound...]).utf8)
    }

    /// The `web/` Roost ships, where `ShippedFolder` finds it.
    static func shippedFolder() -> URL? {
        ShippedFolder.find("web", marker: "index.html")
    }

    static let contentTypes = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "svg": "image/svg+xml", "png": "image/png", "webmanifest": "application/manifest+json", "json": "application/json",
        "txt": "text/plain; charset=utf-8", "ico": "image/x-icon",
    ]

    static func compressible(_ contentType: String) -> Bool {
        contentType.hasPrefix("text/") || contentType.hasPrefix("application/") || contentType.hasPrefix("image/svg")
    }

    /// Whether an `Accept-Encoding` value takes gzip (a `q=0` refuses it, RFC 9110 §12.5.3).
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        for item in header.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard parts.first == "gzip" || parts.first == "x-gzip" || parts.first == "*" else { continue }
            let refused = parts.dropFirst().contains { $0.hasPrefix("q=") && (Double($0.dropFirst(2)) ?? 1) == 0 }
            if !refused { return true }
        }
        return false
    }

    /// Adds a GET route per file, and the app's entry paths.
    func add(to builder: inout Router.Builder) {
        for file in files {
            let respond = Self.responder(file, contentSecurityPolicy: contentSecurityPolicy)
            builder.addInline(.get, file.path, respond)
            if file.path == "/index.html" {
                for path in Self.appEntryPaths { builder.addInline(.get, path, respond) }
            }
        }
    }

    private static func responder(_ file: File, contentSecurityPolicy: String) -> InlineHandler {
        var headers: HTTPHeaders = [
            "Content-Type": file.contentType, "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
        ]
        if file.contentType.hasPrefix("text/html") {
            headers.add("Content-Security-Policy", contentSecurityPolicy)
            headers.add("X-Frame-Options", "DENY")
        }
        if file.gzipped != nil { headers.add("Vary", "Accept-Encoding") }
        // Each encoding is its own representation, with its own tag (RFC 9110 §8.8.3).
        let plain = Variant(headers: headers, etag: file.etag, body: file.body)
        let gzip = file.gzipped.map { body -> Variant in
            var headers = headers
            headers.add("Content-Encoding", "gzip")
            return Variant(headers: headers, etag: String(file.etag.dropLast()) + "-gz\"", body: body)
        }
        return { context in
            let variant = gzip.flatMap { acceptsGzip(context.request.headers["Accept-Encoding"]) ? $0 : nil } ?? plain
            guard let tags = context.request.headers["If-None-Match"] else { return variant.ok }
            let matches = tags == "*" || tags.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == variant.etag }
            return matches ? variant.notModified : variant.ok
        }
    }

    private struct Variant: Sendable {
        let etag: String
        let ok: HTTPResponse
        let notModified: HTTPResponse

        init(headers: HTTPHeaders, etag: String, body: [UInt8]) {
            var headers = headers
            headers.add("ETag", etag)
            self.etag = etag
            ok = HTTPResponse(status: .ok, headers: headers, body: body)
            notModified = HTTPResponse(status: .notModified, headers: headers)
        }
    }
}
