// libFuzzer target for WebSocketReader (server role). Compiled together with RoostProtocol's
// sources by scripts/fuzz. Checks that no input traps and that feeding whole, in two pieces
// and byte by byte all give the same messages and the same failure.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebSocketReader(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = bytes.first else { return 0 }
    let input = Array(bytes.dropFirst())
    let limit = 16 + Int(first) * 8
    let whole = drain(input, pieces: [input.count], limit: limit)
    let split = input.isEmpty ? 0 : Int(first) % (input.count + 1)
    precondition(whole == drain(input, pieces: [split, input.count - split], limit: limit), "split at \(split) changed the result")
    precondition(whole == drain(input, pieces: Array(repeating: 1, count: input.count), limit: limit), "byte feeding changed the result")
    // Round trip: every text or binary message re-encoded as a client frame reads back the same.
    for case .message(let message) in whole {
        var frame: [UInt8] = []
        switch message {
        case .text(let text): WebSocketFrameEncoder.encode(.text, payload: Array(text.utf8), maskKey: 0x1234_5678, into: &frame)
        case .binary(let payload): WebSocketFrameEncoder.encode(.binary, payload: payload, maskKey: 0x1234_5678, into: &frame)
        default: continue
        }
        precondition(drain(frame, pieces: [frame.count], limit: limit) == [.message(message)], "re-encoded message differs")
    }
    return 0
}

private func drain(_ input: [UInt8], pieces: [Int], limit: Int) -> [WebSocketReader.Next] {
    var reader = WebSocketReader(role: .server, maxMessageBytes: limit)
    var results: [WebSocketReader.Next] = []
    var offset = 0
    for piece in pieces {
        reader.feed(input[offset..<(offset + piece)])
        offset += piece
        while true {
            let next = reader.next()
            if next == .needMore { break }
            results.append(next)
            if case .failure = next { return results }
        }
    }
    return results
}
