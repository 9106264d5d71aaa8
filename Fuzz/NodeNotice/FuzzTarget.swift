// libFuzzer target for NodeNotice, the inter-node notice codec. Compiled together with
// RoostProtocol's sources by scripts/fuzz. Checks that no payload traps and that whatever
// decodes encodes to a payload that decodes to the same notice.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNodeNotice(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let notice = NodeNotice(payload: text) else { return 0 }
    precondition(NodeNotice(payload: notice.payload) == notice, "a decoded notice did not survive re-encoding")
    return 0
}
