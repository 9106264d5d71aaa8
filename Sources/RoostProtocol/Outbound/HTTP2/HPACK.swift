/// HPACK (RFC 7541), the header compression of HTTP/2, as a client needs it.
///
/// Requests are encoded without touching the dynamic table (fields the static table has are
/// indexed, the rest are literals "without indexing"), so encoding keeps no state and a request
/// can be encoded on any thread. Responses are decoded in full: indexed fields, literals with
/// and without indexing, the dynamic table and its size updates, Huffman strings. A header
/// block that breaks the rules is a `HPACK.Failure`, which on a connection is a connection
/// error (COMPRESSION_ERROR): a decoder that lost step cannot read the next block either.
public enum HPACK {
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The static table (RFC 7541 Appendix A); index 1 is the first entry.
    static let staticTable: [(name: String, value: String)] = [
        (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"), (":path", "/index.html"),
        (":scheme", "http"), (":scheme", "https"), (":status", "200"), (":status", "204"), (":status", "206"),
        (":status", "304"), (":status", "400"), (":status", "404"), (":status", "500"), ("accept-charset", ""),
        ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""), ("accept", ""),
        ("access-control-allow-origin", ""), ("age", ""), ("allow", ""), ("authorization", ""), ("cache-control", ""),
        ("content-disposition", ""), ("content-encoding", ""), ("content-language", ""), ("content-length", ""),
        ("content-location", ""), ("content-range", ""), ("content-type", ""), ("cookie", ""), ("date", ""), ("etag", ""),
        ("expect", ""), ("expires", ""), ("from", ""), ("host", ""), ("if-match", ""), ("if-modified-since", ""),
        ("if-none-match", ""), ("if-range", ""), ("if-unmodified-since", ""), ("last-modified", ""), ("link", ""),
        ("location", ""), ("max-forwards", ""), ("proxy-authenticate", ""), ("proxy-authorization", ""), ("range", ""),
        ("referer", ""), ("refresh", ""), ("retry-after", ""), ("server", ""), ("set-cookie", ""),
        ("strict-transport-security", ""), ("transfer-encoding", ""), ("user-agent", ""), ("vary", ""), ("via", ""),
        ("www-authenticate", ""),
    ]

    /// The first static index of each name, and of each name and value that has one.
    private static let staticNames: [String: Int] = {
        var names: [String: Int] = [:]
        for (offset, entry) in staticTable.enumerated() where names[entry.name] == nil { names[entry.name] = offset + 1 }
        return names
    }()

    private static let staticFields: [String: Int] = {
        var fields: [String: Int] = [:]
        for (offset, entry) in staticTable.enumerated() where !entry.value.isEmpty { fields[entry.name + "\u{0}" + entry.value] = offset + 1 }
        return fields
    }()

    /// One header block of `fields` (names already lower-case, pseudo-fields first).
    public static func encode(_ fields: [(name: String, value: String)]) -> [UInt8] {
        var block: [UInt8] = []
        block.reserveCapacity(fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 2 })
        for (name, value) in fields {
            if let index = staticFields[name + "\u{0}" + value] {
                appendInteger(index, prefix: 7, flags: 0x80, to: &block)
                continue
            }
            // Literal without indexing (0000xxxx), with the name indexed when the table has it.
            if let index = staticNames[name] {
                appendInteger(index, prefix: 4, flags: 0x00, to: &block)
            } else {
                block.append(0x00)
                appendString(name, to: &block)
            }
            appendString(value, to: &block)
        }
        return block
    }

    static func appendInteger(_ value: Int, prefix: Int, flags: UInt8, to block: inout [UInt8]) {
        let limit = (1 << prefix) - 1
        if value < limit {
            block.append(flags | UInt8(value))
            return
        }
        block.append(flags | UInt8(limit))
        var rest = value - limit
        while rest >= 128 {
            block.append(UInt8(rest & 0x7f) | 0x80)
            rest >>= 7
        }
        block.append(UInt8(rest))
    }

    private static func appendString(_ text: String, to block: inout [UInt8]) {
        appendInteger(text.utf8.count, prefix: 7, flags: 0x00, to: &block)
        block.append(contentsOf: text.utf8)
    }

    /// The decoding side of one connection: its dynamic table lives as long as the connection,
    /// and every header block the server sends passes through it in order.
    public struct Decoder: Sendable {
        /// Entries newest first, and their size by RFC 7541 §4.1 (name + value + 32 each).
        private var dynamic: [(name: String, value: String)] = []
        private var dynamicSize = 0
        /// The size the server's encoder may use now (it lowers it with a size update).
        private var capacity: Int
        /// The most our SETTINGS_HEADER_TABLE_SIZE allows.
        public let maxCapacity: Int
        /// The largest header list one block may decode to (names + values + 32 a field), so a
        /// small block that references large entries again and again cannot fill the memory.
        public var maxListSize: Int

        public init(maxCapacity: Int = 4096, maxListSize: Int = 65_536) {
            self.maxCapacity = maxCapacity
            self.capacity = maxCapacity
            self.maxListSize = maxListSize
        }

        /// The fields of one complete header block, in order.
        public mutating func decode(_ block: [UInt8]) throws(Failure) -> [(name: String, value: String)] {
            var fields: [(name: String, value: String)] = []
            var listSize = 0
            var position = 0
            var sawField = false
            while position < block.count {
                let first = block[position]
                if first & 0x80 != 0 {
                    let index = try Self.integer(block, &position, prefix: 7)
                    fields.append(try entry(index))
                } else if first & 0xc0 == 0x40 {
                    let field = try literal(block, &position, prefix: 6)
                    insert(field)
                    fields.append(field)
                } else if first & 0xe0 == 0x20 {
                    // A size update may only open a block (RFC 7541 §4.2).
                    guard !sawField else { throw Failure("a dynamic table size update after a field") }
                    let size = try Self.integer(block, &position, prefix: 5)
                    guard size <= maxCapacity else { throw Failure("a dynamic table size update to \(size), above \(maxCapacity)") }
                    capacity = size
                    evict(toFit: 0)
                    continue
                } else {
                    // Without indexing (0000xxxx) or never indexed (0001xxxx): both leave the table alone.
                    fields.append(try literal(block, &position, prefix: 4))
                }
                sawField = true
                listSize += fields[fields.count - 1].name.utf8.count + fields[fields.count - 1].value.utf8.count + 32
                guard listSize <= maxListSize else { throw Failure("the header list is larger than \(maxListSize) bytes") }
            }
            return fields
        }

        private func entry(_ index: Int) throws(Failure) -> (name: String, value: String) {
            guard index > 0 else { throw Failure("index 0 names no field") }
            if index <= HPACK.staticTable.count { return HPACK.staticTable[index - 1] }
            let offset = index - HPACK.staticTable.count - 1
            guard offset < dynamic.count else { throw Failure("index \(index) is past the tables") }
            return dynamic[offset]
        }

        private func literal(_ block: [UInt8], _ position: inout Int, prefix: Int) throws(Failure) -> (name: String, value: String) {
            let index = try Self.integer(block, &position, prefix: prefix)
            let name = index == 0 ? try Self.string(block, &position) : try entry(index).name
            return (name, try Self.string(block, &position))
        }

        private mutating func insert(_ field: (name: String, value: String)) {
            let size = field.name.utf8.count + field.value.utf8.count + 32
            evict(toFit: size)
            // An entry larger than the table empties it and is not kept (RFC 7541 §4.4).
            guard size <= capacity else { return }
            dynamic.insert(field, at: 0)
            dynamicSize += size
        }

        private mutating func evict(toFit size: Int) {
            while !dynamic.isEmpty, dynamicSize + size > capacity {
                let last = dynamic.removeLast()
                dynamicSize -= last.name.utf8.count + last.value.utf8.count + 32
            }
        }

        /// An integer with an N-bit prefix (RFC 7541 §5.1), at most 2^24: nothing a header needs is larger.
        static func integer(_ block: [UInt8], _ position: inout Int, prefix: Int) throws(Failure) -> Int {
            guard position < block.count else { throw Failure("the block ends inside an integer") }
            let limit = (1 << prefix) - 1
            var value = Int(block[position]) & limit
            position += 1
            guard value == limit else { return value }
            var shift = 0
            while true {
                guard position < block.count else { throw Failure("the block ends inside an integer") }
                let byte = block[position]
                position += 1
                value += Int(byte & 0x7f) << shift
                guard value <= 1 << 24 else { throw Failure("an integer larger than 2^24") }
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
        }

        /// A string literal (RFC 7541 §5.2), plain or Huffman-coded; its octets must be UTF-8 to
        /// become a String (a value that is not is refused rather than changed).
        static func string(_ block: [UInt8], _ position: inout Int) throws(Failure) -> String {
            guard position < block.count else { throw Failure("the block ends before a string") }
            let huffman = block[position] & 0x80 != 0
            let length = try integer(block, &position, prefix: 7)
            guard length <= block.count - position else { throw Failure("a string runs past the block") }
            let raw = block[position..<position + length]
            position += length
            let octets: [UInt8]
            if huffman {
                guard let decoded = HPACKHuffman.decode(raw) else { throw Failure("a Huffman string does not decode") }
                octets = decoded
            } else {
                octets = Array(raw)
            }
            guard let text = String(validating: octets, as: UTF8.self) else { throw Failure("a header string is not UTF-8") }
            return text
        }
    }
}
