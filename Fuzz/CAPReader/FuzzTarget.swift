// libFuzzer target for the XML reader and the CAP alert read from it (issue #60): warnings come
// from feeds Roost does not control. Compiled together with RoostProtocol's sources by
// scripts/fuzz. Checks that no input traps or runs away (the limits hold), that reading is
// deterministic, and that every polygon read is a ring of at most CAP's limit of points.
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
