/// JSON string literals written by hand where building a Codable value would be wasteful
/// (error bodies, log lines): RFC 8259 §7 escaping.
public enum JSONString {
    /// `text` as a quoted JSON string: quotes, backslashes and control characters escaped, and
    /// U+2028 and U+2029 too (JavaScript once read them as line ends). Works on the UTF-8 bytes:
    /// every event's data is written with it.
    public static func quote(_ text: String) -> String {
        var text = text
        return text.withUTF8 { bytes in
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count + 2)
            out.append(UInt8(ascii: "\""))
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): escape(byte, into: &out)
                case UInt8(ascii: "\n"): escape(UInt8(ascii: "n"), into: &out)
                case UInt8(ascii: "\r"): escape(UInt8(ascii: "r"), into: &out)
                case UInt8(ascii: "\t"): escape(UInt8(ascii: "t"), into: &out)
                case ..<0x20: unicodeEscape(UInt16(byte), into: &out)
                // U+2028 and U+2029 are E2 80 A8 and E2 80 A9 in UTF-8.
                case 0xE2 where index + 1 < bytes.count && bytes[index] == 0x80 && (bytes[index + 1] == 0xA8 || bytes[index + 1] == 0xA9):
                    unicodeEscape(bytes[index + 1] == 0xA8 ? 0x2028 : 0x2029, into: &out)
                    index += 2
                default:
                    out.append(byte)
                }
            }
            out.append(UInt8(ascii: "\""))
            return String(decoding: out, as: UTF8.self)
        }
    }

    /// A backslash and `letter`.
    private static func escape(_ letter: UInt8, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\\"))
        out.append(letter)
    }

    /// `\u` and four lower-case hex digits.
    private static func unicodeEscape(_ value: UInt16, into out: inout [UInt8]) {
        escape(UInt8(ascii: "u"), into: &out)
        for shift in stride(from: 12, through: 0, by: -4) {
            out.append(ASCII.lowerHexDigits[Int(value >> UInt16(shift) & 0xF)])
        }
    }
}
