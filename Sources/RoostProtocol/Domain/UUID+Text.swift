import Foundation

/// A UUID as the API, PostgreSQL and the bus between nodes write it: 36 characters, lower-case
/// hex in groups of 8-4-4-4-12. Every query parameter, row, event and notice carries some, so
/// both directions work on bytes; Foundation's `uuidString` and `UUID(uuidString:)` go through
/// `sprintf` and `sscanf` (about 2% of the server core in a profile of posts, some 5% of the
/// server's own CPU).
extension UUID {
    /// Lower-case text (`uuidString` is upper case).
    public var lowercasedText: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                let digits = ASCII.lowerHexDigits
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
    public init?(text: String) {
        var text = text
        guard let uuid = text.withUTF8(UUIDText.parse) else { return nil }
        self.init(uuid: uuid)
    }

    /// The same for part of a string (a notice's field, a cursor's), without copying it out.
    /// Not generic over `StringProtocol`: across modules that would read each byte through a
    /// protocol witness, ten times slower than Foundation's `sscanf`.
    public init?(text: Substring) {
        var text = text
        guard let uuid = text.withUTF8(UUIDText.parse) else { return nil }
        self.init(uuid: uuid)
    }
}

private enum UUIDText {
    static func parse(_ text: UnsafeBufferPointer<UInt8>) -> uuid_t? {
        guard text.count == 36 else { return nil }
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let read = withUnsafeMutableBytes(of: &uuid) { output -> Bool in
            var position = 0
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    guard text[position] == UInt8(ascii: "-") else { return false }
                    position += 1
                }
                guard let high = ASCII.hexValue(text[position]), let low = ASCII.hexValue(text[position + 1]) else { return false }
                output[index] = high << 4 | low
                position += 2
            }
            return true
        }
        return read ? uuid : nil
    }
}
