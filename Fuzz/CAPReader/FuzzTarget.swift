// libFuzzer target for the XML reader and what is read from it (issue #60): a CAP alert, and a
// feed (Atom, RSS, or a lone alert) listing them; warnings come from feeds Roost does not
// control. Compiled together with RoostProtocol's sources by scripts/fuzz. Checks that no input
// traps or runs away (the limits hold), that reading is deterministic, that every polygon read
// is a ring of at most CAP's limit of points, and that a feed's links are absolute http(s) URLs.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCAPReader(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var limits = XMLReader.Limits()
    limits.maxBytes = 64 * 1024
    let once = Result { () throws(XMLReader.Refusal) in try XMLReader.parse(bytes, limits: limits) }
    let again = Result { () throws(XMLReader.Refusal) in try XMLReader.parse(bytes, limits: limits) }
    precondition(once == again, "reading the same bytes twice differed")
    guard case .success(let root) = once else { return 0 }
    if let feed = try? CAPFeed.read(root) {
        precondition(feed.entries.count <= CAPFeed.maxEntries, "a feed past its limit was read")
        for entry in feed.entries {
            if case .link(let url) = entry.content {
                precondition(url.lowercased().hasPrefix("http://") || url.lowercased().hasPrefix("https://"), "a link that is not http(s)")
            }
        }
    }
    if let alert = try? CAPAlert.read(root) {
        for info in alert.infos {
            for area in info.areas {
                for shape in area.shapes {
                    precondition(shape.pointCount <= CAPAlert.maxPolygonPoints, "a polygon past the limit was read")
                    _ = shape.contains(Location(lat: 0, lon: 0))
                }
            }
        }
    }
    return 0
}
