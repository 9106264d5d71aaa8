// libFuzzer target for HTTPResponseFraming, which finds where a push service's or webhook's
// response ends on a kept connection. Compiled together with RoostProtocol's sources by
// scripts/fuzz. Checks that no input traps; that a complete response consumed no more than it
// was given and has a status of 200 to 599; that it stays complete, with the same answer,
// when more bytes follow (the next response's); that no prefix of it was complete; and that
// its body (as a feed poll reads it) is there and no longer than what was consumed.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPResponseFraming(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let closed = data[0] & 1 == 1
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    var framing = HTTPResponseFraming()
    framing.limit = 4096
    let step = framing.step(bytes, closed: closed)
    guard case .complete(let response, let consumed, _) = step else { return 0 }
    precondition(consumed <= bytes.count, "consumed more than was read")
    precondition((200...599).contains(response.status), "a final status out of range")
    let body = HTTPResponseFraming.body(bytes, consumed: consumed)
    precondition(body != nil && body!.count <= consumed, "a complete response's body could not be read")
    if !closed {
        let whole = Array(bytes[0..<consumed])
        precondition(framing.step(whole, closed: false) == step || consumed == bytes.count, "the bytes after a response changed it")
        if consumed > 0 {
            precondition(framing.step(Array(whole.dropLast()), closed: false) == .needMore
                         || whole.count > framing.limit, "a response was complete before its last byte")
        }
    }
    return 0
}
