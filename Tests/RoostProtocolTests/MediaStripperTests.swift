import RoostProtocol
import RoostTestSupport
import Testing

/// The metadata strippers on files built byte by byte: what stays, what goes, that pieces of any
/// size give the same output, and that broken files are refused. (Real photos, written by
/// exiftool and read back by exiftool and Pillow, are MediaProcessTests' business.)
struct MediaStripperTests {
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
        let (stripper, out) = try strip(MediaSamples.jpeg())
        #expect(stripper.type == .jpeg && stripper.width == 3 && stripper.height == 2)
        let expected = [0xFF, 0xD8]
            + MediaSamples.segment(0xE0, Array("JFIF\0".utf8) + [1, 1, 0, 0, 1, 0, 1, 0, 0])
            + MediaSamples.segment(0xE1, Array("Exif\0\0".utf8) + [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0])
            + MediaSamples.segment(0xDB, [0] + [UInt8](repeating: 1, count: 64))
            + MediaSamples.segment(0xC0, [8, 0, 2, 0, 3, 1, 1, 0x11, 0])
            + MediaSamples.segment(0xC4, [0] + [UInt8](repeating: 0, count: 16))
            + MediaSamples.segment(0xDA, [1, 1, 0, 0, 63, 0])
            + [0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56, 0xFF, 0xD9]
        #expect(out == expected)
        #expect(!Self.contains(out, MediaSamples.secret))
        // An upright photo needs no Exif at all.
        let (_, upright) = try strip(MediaSamples.jpeg(orientation: 1))
        #expect(!Self.contains(upright, Array("Exif".utf8)))
    }

    @Test(arguments: [1, 2, 3, 7, 64])
    func piecesOfAnySizeGiveTheSameOutput(size: Int) throws {
        for file in [MediaSamples.jpeg(), MediaSamples.png(), MediaSamples.webp(), MediaSamples.pdf] {
            #expect(try strip(file, pieces: size).1 == strip(file).1)
        }
    }

    @Test func aPNGKeepsItsRenderingChunksAndDropsTextExifTimeAndPrivateOnes() throws {
        let (stripper, out) = try strip(MediaSamples.png())
        #expect(stripper.type == .png && stripper.width == 5 && stripper.height == 4)
        #expect(out == MediaSamples.pngSignature + MediaSamples.chunk("IHDR", [0, 0, 0, 5, 0, 0, 0, 4, 8, 2, 0, 0, 0]) + MediaSamples.chunk("gAMA", [0, 0, 0xB1, 0x8F])
                + MediaSamples.chunk("IDAT", [0x78, 0x9C, 0x63, 0x60, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01]) + MediaSamples.chunk("IEND", []))
        #expect(throws: MediaRejection.self) { try strip(MediaSamples.png(idatCRCBroken: true)) }
    }

    @Test func aWebPLosesItsExifAndXMPAndItsHeaderSaysSo() throws {
        let (stripper, out) = try strip(MediaSamples.webp())
        #expect(stripper.type == .webp && stripper.width == 320 && stripper.height == 240)
        var flags = MediaSamples.vp8x
        flags[0] = 0x20
        #expect(out == MediaSamples.riff(MediaSamples.riffChunk("VP8X", flags) + MediaSamples.riffChunk("ICCP", [1, 2, 3]) + MediaSamples.riffChunk("VP8L", MediaSamples.vp8l)))
        #expect(!Self.contains(out, MediaSamples.secret))
    }

    @Test func onlyChunksAndSegmentsKnownToMakeThePicturePass() throws {
        // WebP: LIST/INFO (author, software, dates) and a chunk nobody knows go; alpha stays.
        let info = MediaSamples.riffChunk("LIST", Array("INFOIART".utf8) + [9, 0, 0, 0] + Array("Ann Lee\0\0".utf8))
        let webp = MediaSamples.riff(MediaSamples.riffChunk("VP8X", MediaSamples.vp8x) + info + MediaSamples.riffChunk("ALPH", [0, 1])
                                     + MediaSamples.riffChunk("ZZZZ", MediaSamples.secret) + MediaSamples.riffChunk("VP8L", MediaSamples.vp8l))
        let (_, strippedWebP) = try strip(webp)
        #expect(!Self.contains(strippedWebP, Array("Ann Lee".utf8)) && !Self.contains(strippedWebP, MediaSamples.secret))
        #expect(Self.contains(strippedWebP, MediaSamples.riffChunk("ALPH", [0, 1])) && Self.contains(strippedWebP, MediaSamples.riffChunk("VP8L", MediaSamples.vp8l)))
        // JPEG: an unknown APPn and a JPGn extension go like IPTC; the tables stay.
        let jpeg = [0xFF, 0xD8] + MediaSamples.segment(0xE5, MediaSamples.secret) + MediaSamples.segment(0xF3, MediaSamples.secret)
            + MediaSamples.segment(0xDB, [0] + [UInt8](repeating: 1, count: 64)) + MediaSamples.segment(0xC0, [8, 0, 2, 0, 3, 1, 1, 0x11, 0])
            + MediaSamples.segment(0xDA, [1, 1, 0, 0, 63, 0]) + [0x12, 0xFF, 0xD9]
        let (_, strippedJPEG) = try strip(jpeg)
        #expect(!Self.contains(strippedJPEG, MediaSamples.secret))
        #expect(Self.contains(strippedJPEG, MediaSamples.segment(0xDB, [0] + [UInt8](repeating: 1, count: 64))))
    }

    @Test func typesAreToldByTheirBytesAndADeclaredTypeThatDisagreesIsRefused() throws {
        #expect(try strip(MediaSamples.pdf, contentType: "application/pdf").0.type == .pdf)
        #expect(try strip(MediaSamples.jpeg(), contentType: "image/jpg; charset=x").0.type == .jpeg)
        #expect(try strip(MediaSamples.png(), contentType: "application/octet-stream").0.type == .png)
        for (bytes, type) in [(MediaSamples.jpeg(), "image/png"), (MediaSamples.png(), "image/webp"), (MediaSamples.pdf, "image/jpeg")] {
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
        for file in [MediaSamples.jpeg(), MediaSamples.png(), MediaSamples.webp(), MediaSamples.pdf] {
            for cut in stride(from: 1, to: file.count - MediaSamples.secret.count - 8, by: 3) {
                #expect(throws: MediaRejection.self, "cut at \(cut)") { try strip(Array(file[0..<cut])) }
            }
        }
    }

    @Test(arguments: 0..<300) func randomBytesNeverTrapAndOutputIsNeverLongerThanInputAndTheSmallExif(seed: Int) {
        var random = SeededGenerator(seed: UInt64(seed))
        let bases = [MediaSamples.jpeg(), MediaSamples.png(), MediaSamples.webp(), MediaSamples.pdf]
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
