// libFuzzer target for HTTP2ClientSession (and through it HTTP2.FrameReader and HPACK.Decoder),
// the client side of the delivery engine's HTTP/2 connections to push services. Compiled
// together with RoostProtocol's sources by scripts/fuzz. The first byte opens up to 7
// requests and sets the size of the pieces the rest (the server's bytes) arrives in. Checks
// that no input traps; that every stream ends at most once, and every one has ended once the
// session is closed; that nothing follows `closed`; and that what the client sends is whole
// frames.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2ClientSession(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let requests = Int(data[0] & 0x07)
    let piece = Int(data[0] >> 3) + 1
    let server = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    var settings = HTTP2ClientSession.Settings()
    settings.maxBodyKept = 64
    var session = HTTP2ClientSession(settings: settings)
    var opened: Set<UInt32> = []
    for index in 0..<requests {
        let fields: [(name: String, value: String)] = [(":method", "POST"), (":scheme", "https"), (":authority", "push.test"), (":path", "/p/\(index)")]
        if let stream = session.open(fields, body: [UInt8](repeating: UInt8(index), count: index * 5_000)) { opened.insert(stream) }
    }
    var ended: Set<UInt32> = []
    var closed = false
    var sent = session.takeOutput()
    var offset = 0
    while offset < server.count {
        let end = min(server.count, offset + piece)
        for event in session.receive(Array(server[offset..<end])) {
            precondition(!closed, "an event after the session closed")
            let stream: UInt32
            switch event {
            case .response(let answered, let response):
                precondition((200...599).contains(response.status), "a response with status \(response.status)")
                precondition(response.body.count <= 64, "more body kept than the limit")
                stream = answered
            case .streamFailed(let failed, _, _):
                stream = failed
            case .closed:
                closed = true
                continue
            }
            precondition(opened.contains(stream), "an event for stream \(stream), never opened")
            precondition(ended.insert(stream).inserted, "stream \(stream) ended twice")
        }
        sent += session.takeOutput()
        offset = end
    }
    if closed { precondition(ended == opened, "the session closed with streams that never ended") }
    precondition(session.isClosed == closed, "isClosed and the closed event disagree")
    var reader = HTTP2.FrameReader(maxFrameSize: 1 << 24)
    reader.append(Array(sent.dropFirst(HTTP2.preface.count)))
    var frames = 0
    while let _ = try? reader.next() { frames += 1 }
    precondition(frames > 0 && sent.starts(with: HTTP2.preface), "the client's bytes are not whole frames after the preface")
    return 0
}
