import CCrypto
import Foundation

/// SIA DC-09 (ANSI/SIA DC-09-2013), the framing alarm panels use to report over IP:
/// `<LF><CRC><0LLL>"<ID>"<seq>[R<rcvr>]L<line>#<acct>[<data>][<ext>]…<timestamp><CR>`, the CRC
/// (CRC-16/ARC) and the length over everything from the first `"` to the CR. Encrypted
/// messages (`"*SIA-DCS"`, `"*ADM-CID"`, `"*NULL"`) carry, after the `[`, the hex of AES-CBC
/// (zero IV, 128, 192 or 256-bit key) over padding, `|`, the data, the extensions and the
/// timestamp. Pure: bytes in, values out; the receiver decides what to answer with `DC09Reply`.
public enum DC09 {
    /// The longest frame read, LF to CR (the standard's length field goes to 0x3FF of body).
    public static let maxFrameBytes = 1100
    /// Events read from one message; more are refused.
    public static let maxEvents = 16

    public enum Token: String, Sendable {
        case sia = "SIA-DCS"
        case contactID = "ADM-CID"
        case null = "NULL"
    }

    /// An extension block after the data (`[X…]` longitude, `[Y…]` latitude, `[V…]` a
    /// verification URL, `[K…]` a key change, `[M…]` a MAC address, `[R…]` a room…).
    public struct Extension: Equatable, Sendable {
        public let kind: Character
        public let value: String
    }

    /// What a frame says before its data: enough to answer it, even when the rest cannot be read.
    public struct Header: Equatable, Sendable {
        public let token: Token
        public let encrypted: Bool
        /// The sequence number as sent (four characters), echoed in the reply.
        public let sequence: String
        /// The receiver number (hex digits after `R`), when the panel sent one.
        public let receiver: String?
        /// The line prefix (hex digits after `L`).
        public let line: String
        public let account: String

        public var identity: Identity { Identity(receiver: receiver, line: line, account: account) }
    }

    public struct Frame: Equatable, Sendable {
        public let header: Header
        /// The data block without its brackets (`#1234|Nri1/BA001`; empty for a link test).
        public let data: String
        public let extensions: [Extension]
        /// The message's timestamp (UTC), required when it was encrypted.
        public let timestamp: Date?
    }

    /// Why a frame is not taken. The receiver answers `NAK` to a frame it could not read whole
    /// (`.corrupt`, `.stale`), and `DUH` to one it read but cannot use (`.undecryptable`,
    /// `.unsupported`).
    public enum Refusal: Error, Equatable, Sendable {
        /// Framing, CRC or length wrong: the bytes were damaged or are not DC-09.
        case corrupt(String)
        /// The timestamp is outside the window.
        case stale(Date)
        /// Encrypted, and no key for the account, or not with the key Roost holds.
        case undecryptable(Header)
        /// Read, but not a message this receiver takes (an ID it does not know).
        case unsupported(String)
    }

    /// The identity a frame names, known before anything encrypted is read: the receiver picks
    /// the account's key by it.
    public struct Identity: Hashable, Sendable {
        public let receiver: String?
        public let line: String
        public let account: String
    }

    // MARK: - CRC

    /// CRC-16/ARC: reflected polynomial 0xA001, initial value 0, as DC-09 (from DC-07) uses.
    public static func crc16<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xA001 : crc >> 1 }
        }
        return crc
    }

    // MARK: - Reading

    /// Reads one frame, LF to CR. `key` gives the AES key of the identity the frame names (nil:
    /// none known, so an encrypted frame is `.undecryptable`); `window` is how far before and
    /// after `now` a timestamp may be (the standard's default: 40 s behind, 20 s ahead).
    public static func read(_ frame: [UInt8], now: Date, window: (behind: TimeInterval, ahead: TimeInterval) = (40, 20),
                            key: (Identity) -> [UInt8]?) throws(Refusal) -> Frame {
        guard frame.count <= maxFrameBytes else { throw .corrupt("longer than \(maxFrameBytes) bytes") }
        guard frame.count >= 12, frame.first == 0x0A, frame.last == 0x0D else { throw .corrupt("not framed by LF and CR") }
        // The CRC in four hex characters, or (some panels) in two binary bytes.
        let crc: UInt16, lengthStart: Int
        if let text = hex(frame[1..<5]), frame.count > 9, hex(frame[5..<9]) != nil, frame[9] == 0x22 {
            (crc, lengthStart) = (UInt16(text), 5)
        } else if hex(frame[3..<7]) != nil, frame[7] == 0x22 {
            (crc, lengthStart) = (UInt16(frame[1]) << 8 | UInt16(frame[2]), 3)
        } else {
            throw .corrupt("no CRC and length before the ID")
        }
        let body = frame[(lengthStart + 4)..<(frame.count - 1)]
        guard let length = hex(frame[lengthStart..<(lengthStart + 4)]), Int(length) == body.count else {
            throw .corrupt("the length field does not match the message")
        }
        guard crc16(body) == crc else { throw .corrupt("bad CRC") }
        guard body.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { throw .corrupt("bytes outside printable ASCII") }
        var cursor = Cursor(String(decoding: body, as: UTF8.self))
        return try frameFields(&cursor, now: now, window: window, key: key)
    }

    private static func frameFields(_ cursor: inout Cursor, now: Date, window: (behind: TimeInterval, ahead: TimeInterval),
                                    key: (Identity) -> [UInt8]?) throws(Refusal) -> Frame {
        guard cursor.take("\""), let quoted = cursor.take(until: "\""), cursor.take("\"") else { throw .corrupt("no quoted ID") }
        let encrypted = quoted.hasPrefix("*")
        guard let token = Token(rawValue: encrypted ? String(quoted.dropFirst()) : quoted) else { throw .unsupported("the ID \(quoted.prefix(20))") }
        guard let sequence = cursor.take(count: 4), sequence.allSatisfy(\.isHexDigit) else { throw .corrupt("no four-digit sequence number") }
        var receiver: String?
        if cursor.take("R") {
            guard let digits = cursor.take(while: \.isHexDigit), (1...6).contains(digits.count) else { throw .corrupt("a bad receiver number") }
            receiver = digits
        }
        guard cursor.take("L"), let line = cursor.take(while: \.isHexDigit), (1...6).contains(line.count) else { throw .corrupt("no line prefix") }
        guard cursor.take("#"), let account = cursor.take(while: { $0.isLetter || $0.isNumber }), (3...16).contains(account.count) else {
            throw .corrupt("no account number")
        }
        guard cursor.take("[") else { throw .corrupt("no data block") }
        let header = Header(token: token, encrypted: encrypted, sequence: sequence, receiver: receiver, line: line, account: account)
        var rest: String
        if encrypted {
            guard let key = key(header.identity), let plain = try decrypt(cursor.rest, key: key) else { throw .undecryptable(header) }
            rest = plain
        } else {
            rest = cursor.rest
        }
        var inner = Cursor(rest)
        guard let data = inner.take(until: "]"), inner.take("]") else { throw .corrupt("the data block is not closed") }
        var extensions: [Extension] = []
        while inner.take("[") {
            guard let block = inner.take(until: "]"), inner.take("]"), let kind = block.first, extensions.count < 8 else {
                throw .corrupt("an extension block is not closed")
            }
            extensions.append(Extension(kind: kind, value: String(block.dropFirst())))
        }
        var timestamp: Date?
        if inner.take("_") {
            guard let text = inner.take(count: 19), let date = Self.date(text) else { throw .corrupt("a timestamp not _HH:MM:SS,MM-DD-YYYY") }
            timestamp = date
        }
        guard inner.isEmpty else { throw .corrupt("something after the timestamp") }
        if encrypted && timestamp == nil { throw .corrupt("an encrypted message without a timestamp") }
        if let timestamp, timestamp < now.addingTimeInterval(-window.behind) || timestamp > now.addingTimeInterval(window.ahead) {
            throw .stale(timestamp)
        }
        return Frame(header: header, data: data, extensions: extensions, timestamp: timestamp)
    }

    /// The plaintext after the padding's `|`; nil when the key does not fit (it decrypts to no
    /// padding and `|`, or to bytes outside printable ASCII).
    private static func decrypt(_ hexText: String, key: [UInt8]) throws(Refusal) -> String? {
        let utf8 = Array(hexText.utf8)
        guard !utf8.isEmpty, utf8.count % 32 == 0, let cipher = bytes(fromHex: utf8) else { throw .corrupt("the encrypted part is not whole blocks of hex") }
        guard let plain = AESCBC.crypt(cipher, key: key, encrypt: false),
              let bar = plain.firstIndex(of: UInt8(ascii: "|")),
              plain[..<bar].allSatisfy({ $0 != UInt8(ascii: "[") && $0 != UInt8(ascii: "]") }),
              plain[(bar + 1)...].allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        return String(decoding: plain[(bar + 1)...], as: UTF8.self)
    }

    // MARK: - Timestamps

    /// `HH:MM:SS,MM-DD-YYYY` in UTC.
    public static func timestamp(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let time = seconds - days * 86_400
        let (year, month, day) = CivilCalendar.date(days: days)
        return String(format: "%02d:%02d:%02d,%02d-%02d-%04d", Int(time / 3600), Int(time % 3600 / 60), Int(time % 60), Int(month), Int(day), Int(year))
    }

    static func date(_ text: String) -> Date? {
        let parts = Array(text.utf8)
        guard parts.count == 19, parts[2] == 0x3A, parts[5] == 0x3A, parts[8] == 0x2C, parts[11] == 0x2D, parts[14] == 0x2D else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            guard parts[range].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return parts[range].reduce(0) { $0 * 10 + Int64($1 - 0x30) }
        }
        guard let hour = number(0..<2), let minute = number(3..<5), let second = number(6..<8), let month = number(9..<11),
              let day = number(12..<14), let year = number(15..<19), hour < 24, minute < 60, second < 60, (1...12).contains(month),
              (1...31).contains(day) else { return nil }
        let days = CivilCalendar.days(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    // MARK: - Hex

    static func hex(_ bytes: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for byte in bytes {
            guard let digit = hexDigit(byte) else { return nil }
            value = value << 4 | digit
        }
        return value
    }

    static func hexDigit(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x30...0x39: Int(byte - 0x30)
        case 0x41...0x46: Int(byte - 0x41 + 10)
        case 0x61...0x66: Int(byte - 0x61 + 10)
        default: nil
        }
    }

    static func bytes(fromHex text: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 2)
        var index = 0
        while index + 1 < text.count {
            guard let high = hexDigit(text[index]), let low = hexDigit(text[index + 1]) else { return nil }
            out.append(UInt8(high << 4 | low))
            index += 2
        }
        return out
    }
}

/// AES-CBC with a zero IV and no padding of its own (DC-09 pads the plaintext itself), by
/// libcrypto; a 16, 24 or 32-byte key.
enum AESCBC {
    static func crypt(_ input: [UInt8], key: [UInt8], encrypt: Bool) -> [UInt8]? {
        let cipher: OpaquePointer?
        switch key.count {
        case 16: cipher = EVP_aes_128_cbc()
        case 24: cipher = EVP_aes_192_cbc()
        case 32: cipher = EVP_aes_256_cbc()
        default: return nil
        }
        guard input.count % 16 == 0, let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        let iv = [UInt8](repeating: 0, count: 16)
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var length: Int32 = 0, final: Int32 = 0
        guard EVP_CipherInit_ex(context, cipher, nil, key, iv, encrypt ? 1 : 0) == 1, EVP_CIPHER_CTX_set_padding(context, 0) == 1,
              EVP_CipherUpdate(context, &output, &length, input, Int32(input.count)) == 1,
              output.withUnsafeMutableBufferPointer({ EVP_CipherFinal_ex(context, $0.baseAddress! + Int(length), &final) }) == 1 else { return nil }
        return Array(output[0..<Int(length + final)])
    }
}

/// A reader over a frame's text.
struct Cursor {
    private let characters: [Character]
    private var index = 0

    init(_ text: String) { characters = Array(text) }

    var isEmpty: Bool { index == characters.count }
    var rest: String { String(characters[index...]) }

    mutating func take(_ character: Character) -> Bool {
        guard index < characters.count, characters[index] == character else { return false }
        index += 1
        return true
    }

    mutating func take(count: Int) -> String? {
        guard characters.count - index >= count else { return nil }
        defer { index += count }
        return String(characters[index..<(index + count)])
    }

    mutating func take(until stop: Character) -> String? {
        guard let end = characters[index...].firstIndex(of: stop) else { return nil }
        defer { index = end }
        return String(characters[index..<end])
    }

    mutating func take(while accepts: (Character) -> Bool) -> String? {
        let start = index
        while index < characters.count, accepts(characters[index]) { index += 1 }
        return index > start ? String(characters[start..<index]) : nil
    }
}
