// libFuzzer target for StreamClientFrame, the stream's client frame parser. Compiled together
// with RoostProtocol's sources by scripts/fuzz. Checks that no text traps and that an accepted
// resume names each group once, sorted, with cursors of at least zero.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStreamClientFrame(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard case .success(.resume(let cursors)) = StreamClientFrame.parse(text) else { return 0 }
    precondition(cursors.allSatisfy { $0.1 >= 0 }, "a negative cursor was accepted")
    precondition(zip(cursors, cursors.dropFirst()).allSatisfy { $0.0.uuidString < $1.0.uuidString }, "cursors not sorted or repeated")
    return 0
}
