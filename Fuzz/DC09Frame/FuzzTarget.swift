// libFuzzer target for the SIA DC-09 codec (DC09.read, DC09Event, DC09Reply). Compiled together
// with RoostProtocol's sources by scripts/fuzz. The first byte picks the key for encrypted
// frames (none, or 16, 24 or 32 bytes). Checks that no input traps, that reading is
// deterministic, and that every answer built for what was read is a well-framed DC-09 frame:
// LF, its CRC and length in hex matching the body, CR.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDC09Frame(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = bytes.first else { return 0 }
    let input = Array(bytes.dropFirst())
    let keySize = [0, 16, 24, 32][Int(first & 3)]
    let key: [UInt8]? = keySize == 0 ? nil : (0..<UInt8(keySize)).map { $0 }
    let now = Date(timeIntervalSince1970: 1_795_000_000)
    let once = Result { () throws(DC09.Refusal) in try DC09.read(input, now: now) { _ in key } }
    let again = Result { () throws(DC09.Refusal) in try DC09.read(input, now: now) { _ in key } }
    precondition(once == again, "reading the same bytes twice differed")
    switch once {
    case .success(let frame):
        _ = try? DC09Event.events(in: frame)
        check(DC09Reply.ack(frame.header, key: key, now: now))
        check(DC09Reply.duh(frame.header))
    case .failure(.undecryptable(let header)):
        check(DC09Reply.duh(header))
    case .failure:
        check(DC09Reply.nak(now: now))
    }
    return 0
}

private func check(_ reply: [UInt8]) {
    precondition(reply.count >= 10 && reply.first == 0x0A && reply.last == 0x0D, "an answer not framed by LF and CR")
    let body = Array(reply[9..<(reply.count - 1)])
    let header = String(decoding: reply[1..<9], as: UTF8.self)
    precondition(header == String(format: "%04X%04X", DC09.crc16(body), body.count), "an answer's CRC or length is wrong")
}
