/// JPEG (ITU T.81) without its metadata: segments are read one at a time (at most 64 KiB each)
/// and kept only when they draw the picture (tables, frame and scan headers, restart
/// intervals) or describe its colour (JFIF, ICC profile, Adobe). Exif (APP1) goes, but its
/// orientation comes back in a minimal Exif of its own, so the photo stays the right way up;
/// XMP, IPTC (APP13), comments and every other APPn go. The entropy-coded scans pass through
/// as they arrive. Anything after the end of image is dropped.
struct JPEGStripper: FormatStripper {
    private enum State: Sendable {
        case start
        /// Expecting a marker's 0xFF.
        case marker
        /// After 0xFF (or fill bytes): the marker's code.
        case code
        /// The two length bytes of a segment with `code`.
        case length(code: UInt8)
        /// A segment's data, `remaining` bytes still to come.
        case segment(code: UInt8, remaining: Int)
        /// Entropy-coded data; `held` when the last byte seen was an 0xFF not yet written.
        case scan(held: Bool)
        case done
    }

    private var state = State.start
    private var pending: [UInt8] = []
    private(set) var width: Int?
    private(set) var height: Int?
    var patch: (offset: Int, bytes: [UInt8])? { nil }

    mutating func feed(_ input: ArraySlice<UInt8>, into output: inout [UInt8]) throws(MediaRejection) {
        var index = input.startIndex
        while index < input.endIndex {
            switch state {
            case .start:
                index = gather(&pending, 2, from: input, at: index)
                if pending.count == 2 {
                    guard pending == [0xFF, 0xD8] else { throw .malformed("a JPEG starts with FF D8") }
                    output += pending
                    pending = []
                    state = .marker
                }
            case .marker:
                guard input[index] == 0xFF else { throw .malformed("a JPEG segment does not start with a marker") }
                index += 1
                state = .code
            case .code:
                let code = input[index]
                index += 1
                try begin(code, into: &output)
            case .length(let code):
                index = gather(&pending, 2, from: input, at: index)
                if pending.count == 2 {
                    let length = Int(pending[0]) << 8 | Int(pending[1])
                    pending = []
                    guard length >= 2 else { throw .malformed("a JPEG segment's length is under 2") }
                    state = .segment(code: code, remaining: length - 2)
                    if length == 2 { try end(code, into: &output) }
                }
            case .segment(let code, let remaining):
                let take = min(remaining, input.endIndex - index)
                pending += input[index..<(index + take)]
                index += take
                state = .segment(code: code, remaining: remaining - take)
                if take == remaining { try end(code, into: &output) }
            case .scan(let held):
                index = try scan(input, from: index, held: held, into: &output)
            case .done:
                return  // whatever follows the end of the image is not stored
            }
        }
    }

    mutating func finish(into output: inout [UInt8]) throws(MediaRejection) {
        guard case .done = state else { throw .malformed("the JPEG ends early (no end-of-image marker)") }
        guard width != nil else { throw .malformed("the JPEG has no frame header") }
    }

    /// A marker's code: fill bytes, markers without data, or the start of a segment.
    private mutating func begin(_ code: UInt8, into output: inout [UInt8]) throws(MediaRejection) {
        switch code {
        case 0xFF:
            state = .code  // fill byte
        case 0xD9:
            output += [0xFF, 0xD9]
            state = .done
        case 0x01, 0xD0...0xD7:
            output += [0xFF, code]
            state = .marker
        case 0x00, 0xD8:
            throw .malformed("a JPEG has a marker out of place")
        default:
            state = .length(code: code)
        }
    }

    /// A whole segment is in `pending`: write it, or what may be kept of it, or nothing.
    private mutating func end(_ code: UInt8, into output: inout [UInt8]) throws(MediaRejection) {
        let data = pending
        pending = []
        state = .marker
        switch code {
        case 0xC0...0xC3, 0xC5...0xC7, 0xC9...0xCB, 0xCD...0xCF:
            guard data.count >= 5 else { throw .malformed("a JPEG frame header is too short") }
            height = Int(data[1]) << 8 | Int(data[2])
            width = Int(data[3]) << 8 | Int(data[4])
            Self.write(code, data, into: &output)
        case 0xDA:
            Self.write(code, data, into: &output)
            state = .scan(held: false)
        case 0xE0:
            if Self.starts(data, "JFIF\0") || Self.starts(data, "JFXX\0") { Self.write(code, data, into: &output) }
        case 0xE1:
            if Self.starts(data, "Exif\0\0"), let orientation = Self.orientation(inTIFF: data.dropFirst(6)), orientation != 1 {
                Self.write(0xE1, Self.minimalExif(orientation: orientation), into: &output)
            }
        case 0xE2:
            if Self.starts(data, "ICC_PROFILE\0") { Self.write(code, data, into: &output) }
        case 0xEE:
            if Self.starts(data, "Adobe") { Self.write(code, data, into: &output) }
        case 0xC4, 0xCC, 0xDB, 0xDC, 0xDD, 0xDE, 0xDF:
            Self.write(code, data, into: &output)  // Huffman, arithmetic and quantization tables, line count, restart interval, hierarchy
        default:
            break  // a keep-list: other application segments (IPTC, vendors' notes), comments, JPGn extensions, anything unknown
        }
    }

    /// Entropy-coded bytes pass through until a marker other than a stuffed 0x00 or a restart.
    private mutating func scan(_ input: ArraySlice<UInt8>, from start: Int, held: Bool, into output: inout [UInt8]) throws(MediaRejection) -> Int {
        var index = start
        var held = held
        var runStart = index
        while index < input.endIndex {
            let byte = input[index]
            if held {
                if byte == 0x00 || (0xD0...0xD7).contains(byte) {
                    output += [0xFF, byte]
                    held = false
                    index += 1
                    runStart = index
                    continue
                }
                if byte == 0xFF {  // fill before a marker
                    index += 1
                    runStart = index
                    continue
                }
                // A marker ends the scan: it is read as any other.
                state = .code
                return index
            }
            if byte == 0xFF {
                output += input[runStart..<index]
                held = true
                index += 1
                runStart = index
                continue
            }
            index += 1
        }
        output += input[runStart..<index]
        state = .scan(held: held)
        return index
    }

    private static func write(_ code: UInt8, _ data: [UInt8], into output: inout [UInt8]) {
        let length = data.count + 2
        output += [0xFF, code, UInt8(length >> 8), UInt8(length & 0xFF)]
        output += data
    }

    private static func starts(_ data: [UInt8], _ prefix: String) -> Bool {
        data.starts(with: prefix.utf8)
    }

    /// The Orientation tag (0x0112) of a TIFF header's first IFD, when it is there and sane.
    static func orientation(inTIFF tiff: ArraySlice<UInt8>) -> Int? {
        let bytes = Array(tiff)
        guard bytes.count >= 8 else { return nil }
        let bigEndian: Bool
        switch (bytes[0], bytes[1]) {
        case (0x4D, 0x4D): bigEndian = true
        case (0x49, 0x49): bigEndian = false
        default: return nil
        }
        func u16(_ at: Int) -> Int? {
            guard at >= 0, at + 2 <= bytes.count else { return nil }
            return bigEndian ? Int(bytes[at]) << 8 | Int(bytes[at + 1]) : Int(bytes[at + 1]) << 8 | Int(bytes[at])
        }
        func u32(_ at: Int) -> Int? {
            guard let high = u16(bigEndian ? at : at + 2), let low = u16(bigEndian ? at + 2 : at) else { return nil }
            return high << 16 | low
        }
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return nil }
        for entry in 0..<min(count, 512) {
            let at = ifd + 2 + entry * 12
            guard let tag = u16(at) else { return nil }
            if tag == 0x0112 {
                guard u16(at + 2) == 3, let value = u16(at + 8), (1...8).contains(value) else { return nil }
                return value
            }
        }
        return nil
    }

    /// "Exif\0\0" and a big-endian TIFF header whose one IFD holds only the orientation.
    static func minimalExif(orientation: Int) -> [UInt8] {
        Array("Exif".utf8) + [0, 0] + [0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08]
            + [0x00, 0x01, 0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, UInt8(orientation), 0x00, 0x00]
            + [0x00, 0x00, 0x00, 0x00]
    }
}
