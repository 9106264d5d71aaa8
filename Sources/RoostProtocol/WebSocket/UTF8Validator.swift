/// Incremental UTF-8 validation (RFC 3629, Unicode Table 3-7), fed piece by piece across
/// fragment boundaries; it fails on the first byte that cannot continue a valid sequence.
public struct UTF8Validator: Sendable {
    /// Continuation bytes still expected.
    private var pending: UInt8 = 0
    /// The allowed range of the next continuation byte (narrower after E0, ED, F0, F4).
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    public init() {}

    /// True when the input so far ends on a character boundary.
    public var isComplete: Bool { pending == 0 }

    /// Checks more bytes; false as soon as one is invalid (the validator is then spent).
    public mutating func validate(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = bytes.count
        while index < count {
            if pending == 0 {
                // Fast path: eight ASCII bytes at a time.
                while index + 8 <= count, bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                    index += 8
                }
                guard index < count else { return true }
                let byte = bytes[index]
                index += 1
                switch byte {
                case 0x00...0x7F: continue
                case 0xC2...0xDF: pending = 1; lower = 0x80; upper = 0xBF
                case 0xE0: pending = 2; lower = 0xA0; upper = 0xBF
                case 0xE1...0xEC, 0xEE...0xEF: pending = 2; lower = 0x80; upper = 0xBF
                case 0xED: pending = 2; lower = 0x80; upper = 0x9F
                case 0xF0: pending = 3; lower = 0x90; upper = 0xBF
                case 0xF1...0xF3: pending = 3; lower = 0x80; upper = 0xBF
                case 0xF4: pending = 3; lower = 0x80; upper = 0x8F
                default: return false
                }
            } else {
                let byte = bytes[index]
                index += 1
                guard byte >= lower && byte <= upper else { return false }
                pending -= 1
                lower = 0x80
                upper = 0xBF
            }
        }
        return true
    }

    public mutating func validate(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { validate($0) }
    }
}
