import RoostProtocol
import RoostTestSupport
import Testing

/// The metadata strippers on files built byte by byte: what stays, what goes, that pieces of any
/// size give the same output, and that broken files are refused. (Real photos, written by
/// exiftool and read back by exiftool and Pillow, are MediaProcessTests' business.)
struct MediaStripperTests {
    static func segment(_ code: UInt8, _ data: [UInt8]) -> [UInt8] {
        [0xFF, code, UInt8((data.count + 2) >> 8), UInt8((data.count + 2) & 0xFF)] + data
    }

    static let secret = Array("55.6761N 12.5683E Canon EOS".utf8)

    /// A JPEG's structure with every kind of segment (its scan is not a real picture).
    static func jpeg(orientation: UInt8 = 6) -> [UInt8] {
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

    func strip(_ bytes: [UInt8], contentType: String? = nil, pieces: Int = 0) throws(MediaRejection) -> (MediaStripper, [UInt8]) {
        var stripper = MediaStripper(contentType: contentType)
        var out: [UInt8] = []
        if pieces <= 0 {
            out += try stripper.feed(bytes[...])
        } else {
            var index = 0
            while index < bytes.count {
                let end = min(bytes.count, index + pieces)
                out += try stripper.feed(bytes[index..<end])
                index = end
            }
        }
        out += try stripper.finish()
        if let patch = stripper.patch { out.replaceSubrange(patch.offset..<(patch.offset + patch.bytes.count), with: patch.bytes) }
        return (stripper, out)
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    @Test func aJPEGKeepsItsPictureAndOrientationAndNothingElse() throws {
        let (stripper, out) = try strip(Self.jpeg())
        #expect(stripper.type == .jpeg && stripper.width == 3 && stripper.height == 2)
        let expected = [0xFF, 0xD8]
            + Self.segment(0xE0, Array("JFIF\0".utf8) + [1, 1, 0, 0, 1, 0, 1, 0, 0])
            + Self.segment(0xE1, Array("Exif\0\0".utf8) + [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0])
            + Self.segment(0xDB, [0] + [UInt8](repeating: 1, count: 64))
            + Self.segment(0xC0, [8, 0, 2, 0, 3, 1, 1, 0x11, 0])
            + Self.segment(0xC4, [0] + [UInt8](repeating: 0, count: 16))
            + Self.segment(0xDA, [1, 1, 0, 0, 63, 0])
            + [0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56, 0xFF, 0xD9]
        #expect(out == expected)
        #expect(!Self.contains(out, Self.secret))
        // An upright photo needs no Exif at all.
        let (_, upright) = try strip(Self.jpeg(orientation: 1))
        #expect(!Self.contains(upright, Array("Exif".utf8)))
    }

    @Test(arguments: [1, 2, 3, 7, 64])
    func piecesOfAnySizeGiveTheSameOutput(size: Int) throws {
        for file in [Self.jpeg(), Self.png(), Self.webp(), Self.pdf] {
            #expect(try strip(file, pieces: size).1 == strip(file).1)
        }
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        var crc = [UInt8]()
        var table = CRCForTests()
        table.update(Array(type.utf8) + data)
        let value = table.value
        crc = [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
        let length = UInt32(data.count)
        return [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + Array(type.utf8) + data + crc
    }

    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    static func png(idatCRCBroken: Bool = false) -> [UInt8] {
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

    @Test func aPNGKeepsItsRenderingChunksAndDropsTextExifTimeAndPrivateOnes() throws {
        let (stripper, out) = try strip(Self.png())
        #expect(stripper.type == .png && stripper.width == 5 && stripper.height == 4)
        #expect(out == Self.pngSignature + Self.chunk("IHDR", [0, 0, 0, 5, 0, 0, 0, 4, 8, 2, 0, 0, 0]) + Self.chunk("gAMA", [0, 0, 0xB1, 0x8F])
                + Self.chunk("IDAT", [0x78, 0x9C, 0x63, 0x60, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01]) + Self.chunk("IEND", []))
        #expect(throws: MediaRejection.self) { try strip(Self.png(idatCRCBroken: true)) }
    }

    static func riffChunk(_ fourcc: String, _ data: [UInt8]) -> [UInt8] {
        let size = UInt32(data.count)
        return Array(fourcc.utf8) + [UInt8(size & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size >> 16 & 0xFF), UInt8(size >> 24)]
            + data + (data.count % 2 == 1 ? [0] : [])
    }

    static func riff(_ chunks: [UInt8]) -> [UInt8] {
        let size = UInt32(chunks.count + 4)
        return Array("RIFF".utf8) + [UInt8(size & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size >> 16 & 0xFF), UInt8(size >> 24)] + Array("WEBP".utf8) + chunks
    }

    static let vp8x: [UInt8] = [0x08 | 0x04 | 0x20, 0, 0, 0, 0x3F, 0x01, 0x00, 0xEF, 0x00, 0x00]  // 320 × 240, ICC, EXIF, XMP
    static let vp8l: [UInt8] = [0x2F, 0x3F, 0xC0, 0x3B, 0x00, 0x07, 0x10, 0x11]

    static func webp() -> [UInt8] {
        riff(riffChunk("VP8X", vp8x) + riffChunk("ICCP", [1, 2, 3]) + riffChunk("VP8L", vp8l) + riffChunk("EXIF", secret)
             + riffChunk("XMP ", secret + [0]))
    }

    @Test func aWebPLosesItsExifAndXMPAndItsHeaderSaysSo() throws {
        let (stripper, out) = try strip(Self.webp())
        #expect(stripper.type == .webp && stripper.width == 320 && stripper.height == 240)
        var flags = Self.vp8x
        flags[0] = 0x20
        #expect(out == Self.riff(Self.riffChunk("VP8X", flags) + Self.riffChunk("ICCP", [1, 2, 3]) + Self.riffChunk("VP8L", Self.vp8l)))
        #expect(!Self.contains(out, Self.secret))
    }

    static let pdf = Array("%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n".utf8)

    @Test func typesAreToldByTheirBytesAndADeclaredTypeThatDisagreesIsRefused() throws {
        #expect(try strip(Self.pdf, contentType: "application/pdf").0.type == .pdf)
        #expect(try strip(Self.jpeg(), contentType: "image/jpg; charset=x").0.type == .jpeg)
        #expect(try strip(Self.png(), contentType: "application/octet-stream").0.type == .png)
        for (bytes, type) in [(Self.jpeg(), "image/png"), (Self.png(), "image/webp"), (Self.pdf, "image/jpeg")] {
            #expect(throws: MediaRejection.self) { try strip(bytes, contentType: type) }
        }
        let heic: [UInt8] = [0, 0, 0, 24] + Array("ftypheic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)
        let refused = #expect(throws: MediaRejection.self) { try strip(heic) }
        #expect(refused?.message.contains("send a JPEG") == true)
        #expect(throws: MediaRejection.unsupported("only JPEG, PNG, WebP and PDF files are taken (told by their first bytes)")) {
            try strip(Array("GIF89a......".utf8))
        }
        #expect(throws: MediaRejection.malformed("the upload is empty")) { try strip([]) }
    }

    @Test func everyTruncationIsRefusedNeverStoredAsIfWhole() {
        for file in [Self.jpeg(), Self.png(), Self.webp(), Self.pdf] {
            for cut in stride(from: 1, to: file.count - Self.secret.count - 8, by: 3) {
                #expect(throws: MediaRejection.self, "cut at \(cut)") { try strip(Array(file[0..<cut])) }
            }
        }
    }

    @Test(arguments: 0..<300) func randomBytesNeverTrapAndOutputIsNeverLongerThanInputAndTheSmallExif(seed: Int) {
        var random = SeededGenerator(seed: UInt64(seed))
        let bases = [Self.jpeg(), Self.png(), Self.webp(), Self.pdf]
        var bytes = bases[seed % bases.count]
        for _ in 0..<(1 + Int(random.next() % 8)) {
            let at = Int(random.next() % UInt64(bytes.count))
            bytes[at] = UInt8(truncatingIfNeeded: random.next())
        }
        var stripper = MediaStripper(contentType: nil)
        var out = 0
        do {
            out += try stripper.feed(bytes[...]).count
            out += try stripper.finish().count
        } catch {
            return
        }
        #expect(out <= bytes.count + 34)
    }
}

/// CRC-32 written again, so the test does not trust the code under test for its expected bytes.
struct CRCForTests {
    var crc: UInt32 = 0xFFFF_FFFF
    mutating func update(_ bytes: [UInt8]) {
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
    }
    var value: UInt32 { crc ^ 0xFFFF_FFFF }
}
