/// Header fields in arrival order; names compare case-insensitively and repeats are kept
/// (RFC 9110 §5.2, §5.3).
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name, value) }
    }

    public mutating func reserveCapacity(_ count: Int) {
        fields.reserveCapacity(count)
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Replaces every field of that name with one.
    public mutating func replace(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    public mutating func remove(_ name: String) {
        fields.removeAll { Self.sameName($0.name, name) }
    }

    /// The first value of a field.
    public subscript(_ name: String) -> String? {
        fields.first { Self.sameName($0.name, name) }?.value
    }

    /// Every value of a field, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool {
        fields.contains { Self.sameName($0.name, name) }
    }

    /// The comma-separated elements of a list-valued field across all its lines, trimmed and
    /// lower-cased (`Connection`, `Upgrade`, `Transfer-Encoding`; RFC 9110 §5.6.1).
    public func tokens(_ name: String) -> [String] {
        values(name).flatMap { $0.split(separator: ",") }.map { $0.trimmingOWS().lowercased() }.filter { !$0.isEmpty }
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count && zip(lhs.fields, rhs.fields).allSatisfy { $0 == $1 }
    }

    /// Names most requests carry, returned as constants so parsing them allocates nothing.
    private static let common: [String] = [
        "Host", "Content-Type", "Content-Length", "Authorization", "User-Agent", "Accept", "Connection",
        "Accept-Encoding", "Accept-Language", "Upgrade", "Sec-WebSocket-Key", "Sec-WebSocket-Version",
        "Transfer-Encoding", "X-Request-Id", "X-Forwarded-For", "Origin", "Cache-Control",
    ]
    private static let commonUTF8: [[UInt8]] = common.map { Array($0.utf8) }

    /// The canonical spelling of a common header name, if `bytes` is one (any case).
    static func commonName(_ bytes: ArraySlice<UInt8>) -> String? {
        for (index, candidate) in commonUTF8.enumerated() where candidate.count == bytes.count {
            var same = true
            var position = bytes.startIndex
            for byte in candidate {
                if ASCII.lower(byte) != ASCII.lower(bytes[position]) { same = false; break }
                position += 1
            }
            if same { return common[index] }
        }
        return nil
    }

    /// ASCII case-insensitive equality over the UTF-8 bytes (no lower-cased copies).
    static func sameName(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        var a = a, b = b
        return a.withUTF8 { left in
            b.withUTF8 { right in
                for index in 0..<left.count where ASCII.lower(left[index]) != ASCII.lower(right[index]) { return false }
                return true
            }
        }
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's "optional whitespace").
    func trimmingOWS() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}

/// Byte classes of RFC 9110 §5.6.2 and friends.
enum ASCII {
    static let cr: UInt8 = 13
    static let lf: UInt8 = 10
    static let space: UInt8 = 32
    static let tab: UInt8 = 9
    static let colon: UInt8 = 58

    @inline(__always) static func lower(_ byte: UInt8) -> UInt8 {
        byte >= 65 && byte <= 90 ? byte | 0x20 : byte
    }

    /// tchar: the characters of a token (method, header name).
    static let isTokenTable: [Bool] = (0..<256).map { value in
        let byte = UInt8(value)
        switch byte {
        case 48...57, 65...90, 97...122: return true
        default: return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    @inline(__always) static func isToken(_ byte: UInt8) -> Bool { isTokenTable[Int(byte)] }

    /// A byte allowed in a field value: VCHAR, obs-text, SP, HTAB (no other control characters).
    @inline(__always) static func isFieldValue(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= 32 && byte != 127)
    }

    /// Lower-case hexadecimal digits by value (hashes, UUIDs, `\u` escapes).
    static let lowerHexDigits = Array("0123456789abcdef".utf8)

    /// A decimal digit (JSON numbers, a notice's seq).
    @inline(__always) static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }

    /// A hexadecimal digit's value, in either case.
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 48...57: return byte - 48
        case 65...70: return byte - 55
        case 97...102: return byte - 87
        default: return nil
        }
    }
}
