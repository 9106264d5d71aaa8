/// Media files built byte by byte, with metadata (`secret`) in every place a format keeps it:
/// for the strippers' tests and the media routes' (real photos come from exiftool and Pillow).
public enum MediaSamples {
    public static func segment(_ code: UInt8, _ data: [UInt8]) -> [UInt8] {
        [0xFF, code, UInt8((data.count + 2) >> 8), UInt8((data.count + 2) & 0xFF)] + data
    }

    public static let secret = Array("55.6761N 12.5683E Canon EOS".utf8)

    /// A JPEG's structure with every kind of segment (its scan is not a real picture).
    public static func jpeg(orientation: UInt8 = 6) -> [UInt8] {
        let tiff: [UInt8] = [0x49, 0x49, 0x2A, 0x00, 0x08, 0x00, 0x00, 0x00, 0x02, 0x00,
                             0x12, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, orientation, 0x00, 0x00, 0x00,
                             0x25, 0x88, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x26, 0x00, 0x00, 0x00,
                             0x00, 0x00, 0x00, 0x00] + secret
        return [0xFF, 0xD8]
            + segment(0xE0, Array("JFIF\0".utf8) + [1, 1, 0, 0, 1, 0, 1, 0, 0])
            + segment(0xE1, Array("Exif\0\0".utf8) + tiff)
            + segment(0xE1, Array("http://ns.adobe.com/xap/1.0/\0".utf8) + secret)
            + segment(0xED, Array("Photoshop 3.0\0".utf8) + secret)
            + segment(0xFE, secret)
            + segment(0xDB, [0] + [UInt8](repeating: 1, count: 64))
            + segment(0xC0, [8, 0, 2, 0, 3, 1, 1, 0x11, 0])
            + segment(0xC4, [0] + [UInt8](repeating: 0, count: 16))
            + segment(0xDA, [1, 1, 0, 0, 63, 0])
            + [0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56, 0xFF, 0xFF]
            + [0xFF, 0xD9] + secret
    }

    public static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        var crc = [UInt8]()
        var table = SampleCRC()
        table.update(Array(type.utf8) + data)
        let value = table.value
        crc = [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
        let length = UInt32(data.count)
        return [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + Array(type.utf8) + data + crc
    }

    public static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    public static func png(idatCRCBroken: Bool = false) -> [UInt8] {
        var idat = chunk("IDAT", [0x78, 0x9C, 0x63, 0x60, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01])
        if idatCRCBroken { idat[idat.count - 1] ^= 0xFF }
        return pngSignature
            + chunk("IHDR", [0, 0, 0, 5, 0, 0, 0, 4, 8, 2, 0, 0, 0])
            + chunk("gAMA", [0, 0, 0xB1, 0x8F])
            + chunk("eXIf", secret)
            + chunk("tEXt", Array("Comment\0".utf8) + secret)
            + chunk("iTXt", Array("XML:com.adobe.xmp\0\0\0\0\0".utf8) + secret)
            + chunk("zTXt", Array("Author\0\0".utf8) + secret)
            + chunk("tIME", [7, 234, 11, 23, 10, 0, 0])
            + chunk("prVt", secret)
            + idat
            + chunk("IEND", [])
            + secret
    }

    public static func riffChunk(_ fourcc: String, _ data: [UInt8]) -> [UInt8] {
        let size = UInt32(data.count)
        return Array(fourcc.utf8) + [UInt8(size & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size >> 16 & 0xFF), UInt8(size >> 24)]
            + data + (data.count % 2 == 1 ? [0] : [])
    }

    public static func riff(_ chunks: [UInt8]) -> [UInt8] {
        let size = UInt32(chunks.count + 4)
        return Array("RIFF".utf8) + [UInt8(size & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size >> 16 & 0xFF), UInt8(size >> 24)] + Array("WEBP".utf8) + chunks
    }

    public static let vp8x: [UInt8] = [0x08 | 0x04 | 0x20, 0, 0, 0, 0x3F, 0x01, 0x00, 0xEF, 0x00, 0x00]  // 320 × 240, ICC, EXIF, XMP
    public static let vp8l: [UInt8] = [0x2F, 0x3F, 0xC0, 0x3B, 0x00, 0x07, 0x10, 0x11]

    public static func webp() -> [UInt8] {
        riff(riffChunk("VP8X", vp8x) + riffChunk("ICCP", [1, 2, 3]) + riffChunk("VP8L", vp8l) + riffChunk("EXIF", secret)
             + riffChunk("XMP ", secret + [0]))
    }

    public static let pdf = Array("%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n".utf8)
}

/// CRC-32 written again, so the tests do not trust the code under test for their expected bytes.
public struct SampleCRC {
    var crc: UInt32 = 0xFFFF_FFFF
    public init() {}
    public mutating func update(_ bytes: [UInt8]) {
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
    }
    public var value: UInt32 { crc ^ 0xFFFF_FFFF }
}
