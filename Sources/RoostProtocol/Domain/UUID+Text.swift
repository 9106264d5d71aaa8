import Foundation

/// A UUID as the API, PostgreSQL and the bus between nodes write it: 36 characters, lower-case
/// hex in groups of 8-4-4-4-12. Every query parameter, row, event and notice carries some, so
/// both directions work on bytes; Foundation's `uuidString` and `UUID(uuidString:)` go through
/// `sprintf` and `sscanf` (3% of the server's CPU per post in a profile).
extension UUID {
    /// Lower-case text (`uuidString` is upper case).
    public var lowercasedText: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                let digits = UUIDText.digits
                var at = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[at] = UInt8(ascii: "-")
                        at += 1
                    }
                    text[at] = digits[Int(byte >> 4)]
                    text[at + 1] = digits[Int(byte & 0x0F)]
                    at += 2
                }
                return at
            }
        }
    }

    /// Reads the 8-4-4-4-12 form in either case, as `UUID(uuidString:)` does; nil for anything else.
    public init?(text: some StringProtocol) {
        var bytes = (UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0),
                     UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0))
        let utf8 = text.utf8
        guard utf8.count == 36 else { return nil }
        let read = withUnsafeMutableBytes(of: &bytes) { output -> Bool in
            var high: UInt8? = nil
            var byteIndex = 0
            for (position, character) in utf8.enumerated() {
                if position == 8 || position == 13 || position == 18 || position == 23 {
                    guard character == UInt8(ascii: "-") else { return false }
                    continue
                }
                guard let value = UUIDText.value(of: character) else { return false }
                if let first = high {
                    output[byteIndex] = first << 4 | value
                    byteIndex += 1
                    high = nil
                } else {
                    high = value
                }
            }
            return true
        }
        guard read else { return nil }
        self.init(uuid: bytes)
    }
}

private enum UUIDText {
    static let digits = Array("0123456789abcdef".utf8)

    static func value(of character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return character - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
