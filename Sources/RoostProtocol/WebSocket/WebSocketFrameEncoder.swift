/// Writes WebSocket frames (RFC 6455 §5.2):
///
/// ```
///   0                   1                   2                   3
///   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
///  +-+-+-+-+-------+-+-------------+-------------------------------+
///  |F|R|R|R| opcode|M| Payload len |    Extended payload length    |
///  |I|S|S|S|  (4)  |A|     (7)     |             (16/64)           |
///  |N|V|V|V|       |S|             |   (if payload len==126/127)   |
///  | |1|2|3|       |K|             |                               |
///  +-+-+-+-+-------+-+-------------+ - - - - - - - - - - - - - - - +
///  |     Extended payload length continued, if payload len == 127  |
///  + - - - - - - - - - - - - - - - +-------------------------------+
///  |                               |Masking-key, if MASK set to 1  |
///  +-------------------------------+-------------------------------+
///  | Masking-key (continued)       |          Payload Data         |
///  +-------------------------------- - - - - - - - - - - - - - - - +
/// ```
///
/// Lengths use the shortest form (7, 16 or 64 bits). A server's frames are unmasked, so one
/// encoded frame can be shared by every connection it fans out to; a client's are masked.
public enum WebSocketFrameEncoder {
    /// Appends one frame to `buffer`. `maskKey` is for client frames only.
    public static func encode(
        _ opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer, fin: Bool = true, maskKey: UInt32? = nil,
        into buffer: inout [UInt8]
    ) {
        let count = payload.count
        buffer.reserveCapacity(buffer.count + count + 14)
        buffer.append((fin ? 0x80 : 0) | opcode.rawValue)
        let maskBit: UInt8 = maskKey == nil ? 0 : 0x80
        if count < 126 {
            buffer.append(maskBit | UInt8(count))
        } else if count <= 0xFFFF {
            buffer.append(maskBit | 126)
            buffer.append(UInt8(count >> 8))
            buffer.append(UInt8(count & 0xFF))
        } else {
            buffer.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                buffer.append(UInt8(truncatingIfNeeded: UInt64(count) >> UInt64(shift)))
            }
        }
        guard let maskKey else {
            buffer.append(contentsOf: payload)
            return
        }
        for shift in stride(from: 0, through: 24, by: 8) {
            buffer.append(UInt8(truncatingIfNeeded: maskKey >> UInt32(shift)))
        }
        let start = buffer.count
        buffer.append(contentsOf: payload)
        buffer.withUnsafeMutableBytes {
            WebSocketMasking.apply(key: maskKey, offset: 0, to: UnsafeMutableRawBufferPointer(rebasing: $0[start...]))
        }
    }

    public static func encode(
        _ opcode: WebSocketOpcode, payload: [UInt8], fin: Bool = true, maskKey: UInt32? = nil, into buffer: inout [UInt8]
    ) {
        payload.withUnsafeBytes { encode(opcode, payload: $0, fin: fin, maskKey: maskKey, into: &buffer) }
    }

    /// A complete text frame for `text`.
    public static func text(_ text: String, maskKey: UInt32? = nil) -> [UInt8] {
        var buffer: [UInt8] = []
        encode(.text, payload: Array(text.utf8), maskKey: maskKey, into: &buffer)
        return buffer
    }

    /// A close frame: the code, then a reason cut to fit the 125-byte control limit on a
    /// character boundary.
    public static func close(_ code: WebSocketCloseCode, reason: String = "", maskKey: UInt32? = nil) -> [UInt8] {
        var payload = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        var reasonBytes = 0
        for character in reason {
            let size = character.utf8.count
            guard reasonBytes + size <= 123 else { break }
            payload.append(contentsOf: character.utf8)
            reasonBytes += size
        }
        var buffer: [UInt8] = []
        encode(.close, payload: payload, maskKey: maskKey, into: &buffer)
        return buffer
    }
}
