/// The kinds of file Roost stores (API.md "Media"), told apart by their first bytes.
public enum MediaType: String, Sendable, CaseIterable {
    case jpeg = "image/jpeg"
    case png = "image/png"
    case webp = "image/webp"
    case heic = "image/heic"
    case pdf = "application/pdf"

    /// Bytes `sniff` needs to decide.
    public static let sniffLength = 12

    /// The type the first bytes name, or nil for anything else.
    public static func sniff(_ prefix: ArraySlice<UInt8>) -> MediaType? {
        let bytes = Array(prefix.prefix(sniffLength))
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + magic.count && Array(bytes[offset..<(offset + magic.count)]) == magic
        }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .webp }
        if starts(Array("%PDF-".utf8)) { return .pdf }
        if starts(Array("ftyp".utf8), at: 4), bytes.count >= 12,
           ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"].contains(String(decoding: bytes[8..<12], as: UTF8.self)) {
            return .heic
        }
        return nil
    }

    /// The type a `Content-Type` header names (parameters ignored; a few common aliases), or
    /// nil when it names none of these (`application/octet-stream`, say: then the bytes decide).
    public static func declared(_ contentType: String) -> MediaType? {
        let essence = contentType.split(separator: ";", maxSplits: 1).first.map { String($0).trimmingOWS().lowercased() } ?? ""
        switch essence {
        case "image/jpg", "image/pjpeg": return .jpeg
        case "image/heif": return .heic
        default: return MediaType(rawValue: essence)
        }
    }
}

/// Why an upload is refused: `malformed` (400: truncated or broken), `unsupported` (415).
public enum MediaRejection: Error, Sendable, Equatable {
    case malformed(String)
    case unsupported(String)

    public var message: String {
        switch self {
        case .malformed(let message), .unsupported(let message): message
        }
    }
}

/// One format's metadata stripper: push-style, like the HTTP parser. Bytes go in as they
/// arrive, in pieces of any size; what may be stored comes out, never a byte of the metadata.
protocol FormatStripper: Sendable {
    mutating func feed(_ input: ArraySlice<UInt8>, into output: inout [UInt8]) throws(MediaRejection)
    /// The input ended: the last bytes out, or why the file is incomplete.
    mutating func finish(into output: inout [UInt8]) throws(MediaRejection)
    var width: Int? { get }
    var height: Int? { get }
    /// Bytes to write over the output at an offset once it is complete (WebP's RIFF size).
    var patch: (offset: Int, bytes: [UInt8])? { get }
}

/// An upload's bytes on their way to storage (API.md "Media"): the type is read from the first
/// bytes (a declared `Content-Type` that disagrees is refused), then every piece passes through
/// the format's stripper, which leaves out location, device and text metadata, so nothing of
/// it is ever stored: JPEG keeps its image segments, the JFIF, ICC and Adobe ones and, of the
/// Exif, only the orientation; PNG keeps its rendering chunks; WebP drops `EXIF` and `XMP `
/// and says so in its header. PDF passes as it is. HEIC is refused: its metadata items cannot
/// yet be removed reliably.
public struct MediaStripper: Sendable {
    private let declared: MediaType?
    private var head: [UInt8] = []
    private var format: (any FormatStripper)?
    public private(set) var type: MediaType?
    /// Bytes in and out so far.
    public private(set) var bytesIn = 0
    public private(set) var bytesOut = 0

    /// `contentType`: the request's header, when it has one.
    public init(contentType: String?) {
        declared = contentType.flatMap(MediaType.declared)
    }

    public var width: Int? { format?.width }
    public var height: Int? { format?.height }
    public var patch: (offset: Int, bytes: [UInt8])? { format?.patch }

    /// The next piece of the upload: what may be stored of it so far.
    public mutating func feed(_ bytes: ArraySlice<UInt8>) throws(MediaRejection) -> [UInt8] {
        bytesIn += bytes.count
        var output: [UInt8] = []
        if format == nil {
            head += bytes
            guard head.count >= MediaType.sniffLength else { return [] }
            try begin()
            try format!.feed(head[...], into: &output)
            head = []
        } else {
            try format!.feed(bytes, into: &output)
        }
        bytesOut += output.count
        return output
    }

    /// The upload ended: its last bytes, once the file is known whole.
    public mutating func finish() throws(MediaRejection) -> [UInt8] {
        if format == nil {
            guard !head.isEmpty else { throw .malformed("the upload is empty") }
            try begin()
            var output: [UInt8] = []
            try format!.feed(head[...], into: &output)
            head = []
            try format!.finish(into: &output)
            bytesOut += output.count
            return output
        }
        var output: [UInt8] = []
        try format!.finish(into: &output)
        bytesOut += output.count
        return output
    }

    private mutating func begin() throws(MediaRejection) {
        guard let sniffed = MediaType.sniff(head[...]) else {
            throw .unsupported("only JPEG, PNG, WebP and PDF files are taken (told by their first bytes)")
        }
        if let declared, declared != sniffed {
            throw .unsupported("the body is \(sniffed.rawValue), not the \(declared.rawValue) its Content-Type says")
        }
        type = sniffed
        switch sniffed {
        case .jpeg: format = JPEGStripper()
        case .png: format = PNGStripper()
        case .webp: format = WebPStripper()
        case .pdf: format = PDFPassThrough()
        case .heic:
            throw .unsupported("HEIC photos cannot be cleaned of their location reliably yet; send a JPEG (most phones can share one)")
        }
    }
}

/// Moves bytes of `input` from `index` into `pending` until it holds `count` (a header of fixed
/// size that may arrive split across pieces); where reading goes on.
func gather(_ pending: inout [UInt8], _ count: Int, from input: ArraySlice<UInt8>, at index: Int) -> Int {
    let taken = min(count - pending.count, input.endIndex - index)
    pending += input[index..<(index + taken)]
    return index + taken
}

/// PDF is stored as it is (it is not a photo); it must start as a PDF and end with `%%EOF`.
struct PDFPassThrough: FormatStripper {
    private var tail: [UInt8] = []
    var width: Int? { nil }
    var height: Int? { nil }
    var patch: (offset: Int, bytes: [UInt8])? { nil }

    mutating func feed(_ input: ArraySlice<UInt8>, into output: inout [UInt8]) throws(MediaRejection) {
        output += input
        tail += input.suffix(1024)
        if tail.count > 2048 { tail.removeFirst(tail.count - 1024) }
    }

    mutating func finish(into output: inout [UInt8]) throws(MediaRejection) {
        let marker = Array("%%EOF".utf8)
        let window = tail.suffix(1024)
        guard window.count >= marker.count,
              (window.startIndex...(window.endIndex - marker.count)).contains(where: { window[$0..<($0 + marker.count)].elementsEqual(marker) }) else {
            throw .malformed("the PDF ends early (no %%EOF at its end)")
        }
    }
}
