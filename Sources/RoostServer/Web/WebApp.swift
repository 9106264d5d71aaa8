import Foundation
import RoostHTTP
import RoostProtocol

/// The web app of `web/`, read once at start and answered from memory on the event loop
/// (a few dozen small files): `ETag` from the bytes, `Cache-Control: no-cache` so a browser
/// revalidates (a 304 costs one round trip and no body; there is no build step to put
/// hashes in names), and a Content-Security-Policy that lets the page load nothing but
/// its own origin.
struct WebApp: Sendable {
    struct File: Sendable {
        let path: String
        let body: [UInt8]
        let contentType: String
        let etag: String
    }

    /// What the app may load: its own scripts, styles, images (and the `blob:` previews of a
    /// photo about to be sent), its own API and stream; never a frame, a plugin or a form
    /// posted elsewhere.
    static let contentSecurityPolicy = [
        "default-src 'self'", "img-src 'self' blob: data:", "connect-src 'self'", "object-src 'none'",
        "base-uri 'none'", "frame-ancestors 'none'", "form-action 'self'",
    ].joined(separator: "; ")

    /// Paths the app's own router shows (a link in an invitation email is `/join?token=…`):
    /// each answers with `index.html`.
    static let appEntryPaths = ["/", "/join", "/reset"]

    let files: [File]

    /// Reads every file under `folder` (hidden files and unknown types left out).
    init(folder: URL) throws {
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
            let body = Array(try Data(contentsOf: url))
            let digest = Digest.sha256(body).prefix(12).map { String(format: "%02x", $0) }.joined()
            files.append(File(path: relative.hasPrefix("/") ? relative : "/" + relative, body: body, contentType: type, etag: "\"\(digest)\""))
        }
        guard files.contains(where: { $0.path == "/index.html" }) else {
            throw ConfigurationError("the web app's folder \(folder.path) has no index.html")
        }
        self.files = files.sorted { $0.path < $1.path }
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

    /// Adds a GET route per file, and the app's entry paths.
    func add(to builder: inout Router.Builder) {
        for file in files {
            let respond = Self.responder(file)
            builder.addInline(.get, file.path, respond)
            if file.path == "/index.html" {
                for path in Self.appEntryPaths { builder.addInline(.get, path, respond) }
            }
        }
    }

    private static func responder(_ file: File) -> InlineHandler {
        var headers: HTTPHeaders = [
            "Content-Type": file.contentType, "ETag": file.etag, "Cache-Control": "no-cache",
            "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
        ]
        if file.contentType.hasPrefix("text/html") {
            headers.add("Content-Security-Policy", contentSecurityPolicy)
            headers.add("X-Frame-Options", "DENY")
        }
        let ok = HTTPResponse(status: .ok, headers: headers, body: file.body)
        let notModified = HTTPResponse(status: .notModified, headers: headers)
        return { context in
            guard let tags = context.request.headers["If-None-Match"] else { return ok }
            let matches = tags == "*" || tags.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == file.etag }
            return matches ? notModified : ok
        }
    }
}
