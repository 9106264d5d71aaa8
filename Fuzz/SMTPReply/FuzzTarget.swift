// libFuzzer target for SMTPReplyReader, the parser of what an SMTP server answers. Compiled
// together with RoostProtocol's sources by scripts/fuzz. The first byte picks the piece size
// the rest is fed in; checks that no input traps, that every reply keeps the reader's limits
// and a code of 200 to 599, and that the same bytes in one piece give the same replies.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSMTPReply(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let piece = Int(data[0] % 16) + 1
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    func read(in pieceSize: Int) -> [SMTPReply] {
        var reader = SMTPReplyReader()
        var replies: [SMTPReply] = []
        for start in stride(from: 0, to: bytes.count, by: pieceSize) {
            reader.feed(bytes[start..<min(bytes.count, start + pieceSize)])
            do {
                while let reply = try reader.next() {
                    precondition((200...599).contains(reply.code), "a reply code out of range")
                    precondition(!reply.lines.isEmpty && reply.lines.count <= SMTPReplyReader.maxLines, "a reply over its line limit")
                    precondition(reply.lines.allSatisfy { $0.utf8.count <= SMTPReplyReader.maxLineBytes * 3 }, "a line over its limit")
                    replies.append(reply)
                }
            } catch {
                return replies
            }
        }
        return replies
    }
    let pieces = read(in: piece)
    let whole = read(in: max(1, bytes.count))
    precondition(pieces == whole, "the same bytes in other pieces gave other replies")
    return 0
}
