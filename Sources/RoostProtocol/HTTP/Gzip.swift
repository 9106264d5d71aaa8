/// A gzip encoder (RFC 1952 around one RFC 1951 deflate block with the fixed Huffman codes),
/// for the web app's files, compressed once at start. No zlib: the brief allows libpq and
/// OpenSSL only, and a static file's compressor needs neither speed nor the last percent
/// (fixed codes give up roughly a tenth of what dynamic ones would save on text).
public enum Gzip {
    /// `bytes` gzip-compressed.
    public static func compress(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]  // deflate, no name, no time, unknown OS
        var writer = BitWriter()
        writer.write(1, bits: 1)  // BFINAL: the only block
        writer.write(1, bits: 2)  // BTYPE 01: fixed Huffman codes
        Deflate.encode(bytes, into: &writer)
        writer.writeSymbol(256)  // end of block
        output += writer.finish()
        var crc = CRC32()
        crc.update(bytes[...])
        for value in [crc.value, UInt32(truncatingIfNeeded: bytes.count)] {
            output += [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)]
        }
        return output
    }
}

/// Bits packed least significant first (RFC 1951 §3.1.1); Huffman codes go most significant
/// bit first, so they are reversed on the way in.
struct BitWriter {
    private var bytes: [UInt8] = []
    private var buffer: UInt64 = 0
    private var count = 0

    mutating func write(_ value: Int, bits: Int) {
        buffer |= UInt64(value) << UInt64(count)
        count += bits
        while count >= 8 {
            bytes.append(UInt8(truncatingIfNeeded: buffer))
            buffer >>= 8
            count -= 8
        }
    }

    /// A literal/length symbol in the fixed code (§3.2.6).
    mutating func writeSymbol(_ symbol: Int) {
        switch symbol {
        case 0...143: writeCode(0x30 + symbol, bits: 8)
        case 144...255: writeCode(0x190 + symbol - 144, bits: 9)
        case 256...279: writeCode(symbol - 256, bits: 7)
        default: writeCode(0xC0 + symbol - 280, bits: 8)
        }
    }

    mutating func writeCode(_ code: Int, bits: Int) {
        var reversed = 0
        for bit in 0..<bits where code & (1 << bit) != 0 { reversed |= 1 << (bits - 1 - bit) }
        write(reversed, bits: bits)
    }

    mutating func finish() -> [UInt8] {
        if count > 0 { bytes.append(UInt8(truncatingIfNeeded: buffer)) }
        buffer = 0
        count = 0
        return bytes
    }
}

/// LZ77 over a 32 KiB window with hash chains (3-byte hashes, a bounded chain walk), each
/// match or literal written with the fixed codes.
enum Deflate {
    static let lengthBases = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBases = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073,
                                4097, 6145, 8193, 12289, 16385, 24577]
    static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
    static let window = 32_768
    static let maxMatch = 258
    static let chainLimit = 128

    static func encode(_ input: [UInt8], into writer: inout BitWriter) {
        let hashSize = 1 << 15
        var head = [Int](repeating: -1, count: hashSize)
        var previous = [Int](repeating: -1, count: window)
        func hash(_ at: Int) -> Int {
            (Int(input[at]) << 10 ^ Int(input[at + 1]) << 5 ^ Int(input[at + 2])) & (hashSize - 1)
        }
        func insert(_ at: Int) {
            guard at + 2 < input.count else { return }
            let key = hash(at)
            previous[at % window] = head[key]
            head[key] = at
        }
        var position = 0
        while position < input.count {
            var bestLength = 0
            var bestDistance = 0
            if position + 2 < input.count {
                var candidate = head[hash(position)]
                var steps = 0
                let limit = min(maxMatch, input.count - position)
                while candidate >= 0, position - candidate <= window, steps < chainLimit {
                    var length = 0
                    while length < limit, input[candidate + length] == input[position + length] { length += 1 }
                    if length > bestLength {
                        bestLength = length
                        bestDistance = position - candidate
                        if length == limit { break }
                    }
                    let next = previous[candidate % window]
                    if next >= candidate { break }  // the slot was reused by a newer position
                    candidate = next
                    steps += 1
                }
            }
            if bestLength >= 3 {
                writeMatch(length: bestLength, distance: bestDistance, into: &writer)
                for offset in 0..<bestLength { insert(position + offset) }
                position += bestLength
            } else {
                writer.writeSymbol(Int(input[position]))
                insert(position)
                position += 1
            }
        }
    }

    static func writeMatch(length: Int, distance: Int, into writer: inout BitWriter) {
        let lengthIndex = (lengthBases.lastIndex { $0 <= length })!
        writer.writeSymbol(257 + lengthIndex)
        if lengthExtra[lengthIndex] > 0 { writer.write(length - lengthBases[lengthIndex], bits: lengthExtra[lengthIndex]) }
        let distanceIndex = (distanceBases.lastIndex { $0 <= distance })!
        writer.writeCode(distanceIndex, bits: 5)
        if distanceExtra[distanceIndex] > 0 { writer.write(distance - distanceBases[distanceIndex], bits: distanceExtra[distanceIndex]) }
    }
}
