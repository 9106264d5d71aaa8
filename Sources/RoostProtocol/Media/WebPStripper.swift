/// WebP (RIFF) without its metadata: only the chunks known to make the picture pass (`VP8X`,
/// `VP8 `, `VP8L`, `ALPH`, `ANIM`, `ANMF`, `ICCP`); `EXIF`, `XMP `, `LIST`/`INFO` and anything
/// else are left out, the extended header's flags stop announcing EXIF and XMP, and the RIFF size
/// at offset 4 is rewritten once the whole file has passed (`patch`). Anything past the size the
/// RIFF header declares is dropped.
struct WebPStripper: FormatStripper {
    private enum State: Sendable {
        /// "RIFF", size, "WEBP": 12 bytes into `pending`.
        case header
        /// A chunk's fourcc and size: 8 bytes into `pending`.
        case chunkHeader
        /// The first bytes of a chunk whose size is read from them (`VP8X`, `VP8 `, `VP8L`), into `pending`.
        case chunkStart(fourcc: String, size: Int, wanted: Int)
        case data(keep: Bool, remaining: Int)
        case done
    }

    private var state = State.header
    private var pending: [UInt8] = []
    /// Bytes of the file left after the 8-byte RIFF header, as it declares.
    private var left = 0
    private var written = 0
    private var sawImage = false
    private(set) var width: Int?
    private(set) var height: Int?
    private(set) var patch: (offset: Int, bytes: [UInt8])?

    mutating func feed(_ input: ArraySlice<UInt8>, into output: inout [UInt8]) throws(MediaRejection) {
        var index = input.startIndex
        while index < input.endIndex {
            switch state {
            case .header:
                index = gather(&pending, 12, from: input, at: index)
                if pending.count == 12 {
                    let size = Self.le32(pending[4...])
                    guard size >= 4, size % 2 == 0 else { throw .malformed("a WebP's RIFF size is wrong") }
                    left = size - 4
                    emit(Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBP".utf8), into: &output)
                    pending = []
                    state = left == 0 ? .done : .chunkHeader
                }
            case .chunkHeader:
                index = gather(&pending, 8, from: input, at: index)
                if pending.count == 8 { try beginChunk(into: &output) }
            case .chunkStart(let fourcc, let size, let wanted):
                index = gather(&pending, wanted, from: input, at: index)
                if pending.count == wanted { try readStart(fourcc, size: size, into: &output) }
            case .data(let keep, let remaining):
                let count = min(remaining, input.endIndex - index)
                if keep { emit(input[index..<(index + count)], into: &output) }
                index += count
                state = count == remaining ? (left == 0 ? .done : .chunkHeader) : .data(keep: keep, remaining: remaining - count)
            case .done:
                return
            }
        }
    }

    mutating func finish(into output: inout [UInt8]) throws(MediaRejection) {
        guard case .done = state else { throw .malformed("the WebP ends early") }
        guard sawImage, width != nil else { throw .malformed("the WebP has no image") }
        let size = UInt32(written - 8)
        patch = (4, [UInt8(size & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size >> 16 & 0xFF), UInt8(size >> 24)])
    }

    private mutating func emit<Bytes: Collection<UInt8>>(_ bytes: Bytes, into output: inout [UInt8]) {
        output += bytes
        written += bytes.count
    }

    private mutating func beginChunk(into output: inout [UInt8]) throws(MediaRejection) {
        let fourcc = String(decoding: pending[0..<4], as: UTF8.self)
        let size = Self.le32(pending[4...])
        let padded = size + size % 2
        guard 8 + padded <= left else { throw .malformed("a WebP chunk (\(fourcc)) runs past the end of the file") }
        left -= 8 + padded
        let header = pending
        pending = []
        switch fourcc {
        case "VP8X", "VP8 ", "VP8L":
            let wanted = fourcc == "VP8X" ? 10 : fourcc == "VP8 " ? 10 : 5
            guard size >= wanted else { throw .malformed("a WebP \(fourcc) chunk is too short") }
            emit(header, into: &output)
            state = .chunkStart(fourcc: fourcc, size: padded, wanted: wanted)
        case "ALPH", "ANIM", "ANMF", "ICCP":
            if fourcc == "ANMF" { sawImage = true }  // an animation's frame
            emit(header, into: &output)
            state = .data(keep: true, remaining: padded)
            if padded == 0 { state = left == 0 ? .done : .chunkHeader }
        default:
            // A keep-list: EXIF, XMP, LIST/INFO (author, software, dates) and any chunk not
            // known to be part of the picture are left out.
            state = .data(keep: false, remaining: padded)
            if padded == 0 { state = left == 0 ? .done : .chunkHeader }
        }
    }

    /// The first bytes of an image or extended-header chunk: the size, and (VP8X) the flags.
    private mutating func readStart(_ fourcc: String, size: Int, into output: inout [UInt8]) throws(MediaRejection) {
        var start = pending
        pending = []
        switch fourcc {
        case "VP8X":
            start[0] &= ~(0x08 | 0x04)  // no EXIF, no XMP
            width = (Int(start[4]) | Int(start[5]) << 8 | Int(start[6]) << 16) + 1
            height = (Int(start[7]) | Int(start[8]) << 8 | Int(start[9]) << 16) + 1
        case "VP8 ":
            guard start[3] == 0x9D, start[4] == 0x01, start[5] == 0x2A else { throw .malformed("a WebP VP8 frame lacks its start code") }
            sawImage = true
            if width == nil {
                width = (Int(start[6]) | Int(start[7]) << 8) & 0x3FFF
                height = (Int(start[8]) | Int(start[9]) << 8) & 0x3FFF
            }
        default:  // VP8L
            guard start[0] == 0x2F else { throw .malformed("a WebP VP8L chunk lacks its signature") }
            sawImage = true
            if width == nil {
                let bits = Int(start[1]) | Int(start[2]) << 8 | Int(start[3]) << 16 | Int(start[4]) << 24
                width = (bits & 0x3FFF) + 1
                height = (bits >> 14 & 0x3FFF) + 1
            }
        }
        emit(start, into: &output)
        let remaining = size - start.count
        state = remaining > 0 ? .data(keep: true, remaining: remaining) : (left == 0 ? .done : .chunkHeader)
    }

    private static func le32(_ bytes: ArraySlice<UInt8>) -> Int {
        let at = bytes.startIndex
        return Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
    }
}
