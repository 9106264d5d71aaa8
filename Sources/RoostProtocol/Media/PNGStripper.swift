/// PNG (ISO/IEC 15948) without its metadata: chunks pass through as they arrive (their CRCs
/// checked) when they draw the picture or describe its colour, animation or pixel size; every
/// other chunk is left out, text (`tEXt`, `iTXt`, `zTXt`), `eXIf`, `tIME` and private ones
/// among them. Anything after `IEND` is dropped.
struct PNGStripper: FormatStripper {
    private static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    /// Chunks that change what is drawn (or how an APNG plays).
    private static let kept: Set<String> = ["IHDR", "PLTE", "IDAT", "IEND", "tRNS", "cHRM", "gAMA", "iCCP", "sBIT", "sRGB", "cICP",
                                            "mDCv", "cLLi", "bKGD", "hIST", "pHYs", "sPLT", "acTL", "fcTL", "fdAT"]

    private enum State: Sendable {
        case signature
        /// Length and type: 8 bytes into `pending`.
        case header
        case data(keep: Bool, remaining: Int)
        /// The CRC: 4 bytes into `pending`.
        case crc(keep: Bool)
        case done
    }

    private var state = State.signature
    private var pending: [UInt8] = []
    private var type = ""
    private var crc = CRC32()
    private var chunks = 0
    /// IHDR's first bytes, for the size.
    private var header: [UInt8] = []
    private(set) var width: Int?
    private(set) var height: Int?
    var patch: (offset: Int, bytes: [UInt8])? { nil }

    mutating func feed(_ input: ArraySlice<UInt8>, into output: inout [UInt8]) throws(MediaRejection) {
        var index = input.startIndex
        while index < input.endIndex {
            switch state {
            case .signature:
                index = gather(&pending, 8, from: input, at: index)
                if pending.count == 8 {
                    guard pending == Self.signature else { throw .malformed("a PNG starts with its 8-byte signature") }
                    output += pending
                    pending = []
                    state = .header
                }
            case .header:
                index = gather(&pending, 8, from: input, at: index)
                if pending.count == 8 { try beginChunk(into: &output) }
            case .data(let keep, let remaining):
                let take = min(remaining, input.endIndex - index)
                let piece = input[index..<(index + take)]
                index += take
                if keep {
                    crc.update(piece)
                    output += piece
                    if type == "IHDR" && header.count < 8 { header += piece.prefix(8 - header.count) }
                }
                state = remaining == take ? .crc(keep: keep) : .data(keep: keep, remaining: remaining - take)
            case .crc(let keep):
                index = gather(&pending, 4, from: input, at: index)
                if pending.count == 4 { try endChunk(keep: keep, into: &output) }
            case .done:
                return
            }
        }
    }

    mutating func finish(into output: inout [UInt8]) throws(MediaRejection) {
        guard case .done = state else { throw .malformed("the PNG ends early (no IEND chunk)") }
    }

    private mutating func beginChunk(into output: inout [UInt8]) throws(MediaRejection) {
        let length = Int(pending[0]) << 24 | Int(pending[1]) << 16 | Int(pending[2]) << 8 | Int(pending[3])
        let typeBytes = pending[4..<8]
        guard length <= 0x7FFF_FFFF, typeBytes.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else {
            throw .malformed("a PNG chunk has a bad length or type")
        }
        type = String(decoding: typeBytes, as: UTF8.self)
        guard (chunks == 0) == (type == "IHDR") else { throw .malformed("a PNG must begin with IHDR, once") }
        chunks += 1
        let keep = Self.kept.contains(type)
        if keep {
            output += pending
            crc = CRC32()
            crc.update(typeBytes)
        }
        pending = []
        state = length == 0 ? .crc(keep: keep) : .data(keep: keep, remaining: length)
    }

    private mutating func endChunk(keep: Bool, into output: inout [UInt8]) throws(MediaRejection) {
        if keep {
            let stored = UInt32(pending[0]) << 24 | UInt32(pending[1]) << 16 | UInt32(pending[2]) << 8 | UInt32(pending[3])
            guard stored == crc.value else { throw .malformed("a PNG chunk (\(type)) fails its CRC") }
            output += pending
        }
        pending = []
        if type == "IHDR" {
            guard header.count == 8 else { throw .malformed("a PNG's IHDR is too short") }
            width = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
            height = Int(header[4]) << 24 | Int(header[5]) << 16 | Int(header[6]) << 8 | Int(header[7])
        }
        state = type == "IEND" ? .done : .header
    }
}

/// CRC-32 as PNG (and zlib) compute it: reflected, polynomial 0xEDB88320.
struct CRC32: Sendable {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }
    private var state: UInt32 = 0xFFFF_FFFF

    mutating func update(_ bytes: ArraySlice<UInt8>) {
        var crc = state
        Self.table.withUnsafeBufferPointer { table in
            for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        state = crc
    }

    var value: UInt32 { state ^ 0xFFFF_FFFF }
}
