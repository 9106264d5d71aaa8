import RoostProtocol

/// A small deterministic generator (SplitMix64) so randomized tests replay exactly.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A masked client frame, as a browser would send it.
func clientFrame(_ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true, key: UInt32 = 0x3D21_FA37) -> [UInt8] {
    var buffer: [UInt8] = []
    WebSocketFrameEncoder.encode(opcode, payload: payload, fin: fin, maskKey: key, into: &buffer)
    return buffer
}

/// A raw frame with every header bit chosen by the caller (for malformed frames).
func rawFrame(firstByte: UInt8, payload: [UInt8], masked: Bool = true, lengthBytes: [UInt8]? = nil) -> [UInt8] {
    var bytes = [firstByte]
    let maskBit: UInt8 = masked ? 0x80 : 0
    if let lengthBytes {
        bytes.append(maskBit | (lengthBytes.count == 2 ? 126 : 127))
        bytes += lengthBytes
    } else {
        bytes.append(maskBit | UInt8(payload.count))
    }
    if masked { bytes += [0, 0, 0, 0] }  // a zero key leaves the payload as is
    return bytes + payload
}

/// Feeds `bytes` in pieces of `chunk` and collects messages until need-more or a failure.
func readAll(_ bytes: [UInt8], role: WebSocketReader.Role = .server, chunk: Int = Int.max, maxMessageBytes: Int = 64 * 1024)
    -> (messages: [WebSocketMessage], failure: WebSocketProtocolError?)
{
    var reader = WebSocketReader(role: role, maxMessageBytes: maxMessageBytes)
    var messages: [WebSocketMessage] = []
    var index = 0
    repeat {
        let end = min(bytes.count, index + max(1, min(chunk, bytes.count)))
        reader.feed(bytes[index..<end])
        index = end
        loop: while true {
            switch reader.next() {
            case .needMore: break loop
            case .message(let message): messages.append(message)
            case .failure(let error): return (messages, error)
            }
        }
    } while index < bytes.count
    return (messages, nil)
}
