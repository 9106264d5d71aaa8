// libFuzzer target for JSONValue, the request body's JSON reader, and JSONBodyDecoder over it.
// Compiled together with RoostProtocol's sources by scripts/fuzz. Checks that no bytes trap, that
// whatever is accepted is JSON to Foundation too (this reader is the stricter, but for numbers
// beyond a Double's range: their range is the decoder's business here, the reader's there), and
// that an accepted value written back out reads as the same value.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONValue(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? JSONBodyDecoder().decode(Probe.self, from: bytes)
    guard let value = try? JSONValue.parse(bytes) else { return 0 }
    precondition(!numbersFit(value) || (try? JSONSerialization.jsonObject(with: Data(bytes), options: .fragmentsAllowed)) != nil,
                 "accepted what Foundation refuses")
    var text = ""
    write(value, into: &text)
    precondition((try? JSONValue.parse(Array(text.utf8))) == value, "written back, it reads differently: \(text)")
    return 0
}

/// Whether every number in `value` is a finite Double.
private func numbersFit(_ value: JSONValue) -> Bool {
    switch value {
    case .number(let text): return Double(text)?.isFinite == true
    case .array(let elements): return elements.allSatisfy(numbersFit)
    case .object(let members): return members.values.allSatisfy(numbersFit)
    default: return true
    }
}

/// A body of every kind of field, recursive through `children`.
private struct Probe: Decodable {
    let name: String?
    let count: Int?
    let small: UInt8?
    let ratio: Double?
    let flag: Bool?
    let tags: [String]?
    let children: [Probe]?
}

private func write(_ value: JSONValue, into out: inout String) {
    switch value {
    case .null: out += "null"
    case .bool(let bool): out += bool ? "true" : "false"
    case .number(let text): out += text
    case .string(let string): out += JSONString.quote(string)
    case .array(let elements):
        out += "["
        for (index, element) in elements.enumerated() {
            if index > 0 { out += "," }
            write(element, into: &out)
        }
        out += "]"
    case .object(let members):
        out += "{"
        for (index, (name, member)) in members.enumerated() {
            if index > 0 { out += "," }
            out += JSONString.quote(name) + ":"
            write(member, into: &out)
        }
        out += "}"
    }
}
