import Foundation
import RoostHTTP

/// Where the web app's maps get their tiles (`ROOST_MAP_TILE_URL`): a URL template with `{z}`,
/// `{x}` and `{y}`, fetched by the browser, never by Roost. The page's Content-Security-Policy
/// allows images from exactly the template's origin, and the app reads the template and the
/// attribution from two `<meta>` elements of `index.html`.
struct MapTiles: Sendable, Equatable {
    static let openStreetMap = MapTiles(template: "https://tile.openstreetmap.org/{z}/{x}/{y}.png", origin: "https://tile.openstreetmap.org",
                                        attribution: "© OpenStreetMap contributors")

    let template: String
    /// `scheme://host[:port]`, for the CSP's img-src.
    let origin: String
    let attribution: String

    /// A checked template: http or https, a host, `{z}`, `{x}` and `{y}` each once, and nothing
    /// a CSP source or an HTML attribute could be broken with (no space, quote, `;`, `,`, `<`).
    static func parse(_ template: String, attribution: String?) throws -> MapTiles {
        let placeholders = ["{z}", "{x}", "{y}"]
        guard template.count <= 500,
              !template.contains(where: { $0.isWhitespace || "\"'<>;,\\`".contains($0) || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? true }),
              placeholders.allSatisfy({ template.components(separatedBy: $0).count == 2 }) else {
            throw ConfigurationError("ROOST_MAP_TILE_URL must be an http(s) URL with {z}, {x} and {y} once each "
                                     + "(https://tile.example.org/{z}/{x}/{y}.png), or off")
        }
        let probe = placeholders.reduce(template) { $0.replacingOccurrences(of: $1, with: "0") }
        guard let url = URLComponents(string: probe), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
              let host = url.host, !host.isEmpty, url.user == nil, url.password == nil else {
            throw ConfigurationError("ROOST_MAP_TILE_URL must be an http(s) URL with a host, not '\(template)'")
        }
        let text = (attribution ?? "").trimmingCharacters(in: .whitespaces)
        guard text.count <= 200, !text.contains(where: { $0.asciiValue.map { $0 < 0x20 } ?? false }) else {
            throw ConfigurationError("ROOST_MAP_ATTRIBUTION must be one line of at most 200 characters")
        }
        let hostPart = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return MapTiles(template: template, origin: "\(scheme)://\(hostPart.lowercased())\(url.port.map { ":\($0)" } ?? "")",
                        attribution: text.isEmpty ? "Map tiles: \(hostPart)" : text)
    }

    /// The configured tiles: nil for `off` (the app shows places as text and a link).
    static func from(_ configuration: ServerConfiguration) throws -> MapTiles? {
        switch configuration.mapTileURL {
        case nil: configuration.mapAttribution.map { MapTiles(template: openStreetMap.template, origin: openStreetMap.origin, attribution: $0) }
            ?? openStreetMap
        case "off"?: nil
        case let template?: try parse(template, attribution: configuration.mapAttribution)
        }
    }
}
