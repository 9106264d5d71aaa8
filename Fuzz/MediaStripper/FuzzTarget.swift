// libFuzzer target for the media metadata strippers (MediaStripper: JPEG, PNG, WebP, PDF and the
// type sniffing in front of them). Compiled together with RoostProtocol's sources by
// scripts/fuzz (one module). The seeds are one file of each format; the fuzzer's first byte
// picks where the input is split.
//
// Beyond "never traps": feeding the file whole, in two pieces, or (when small) a byte at a time
// gives the same output or the same refusal; and the output is never longer than the input
// plus the minimal Exif a JPEG's orientation may need (34 bytes).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMediaStripper(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = bytes.first else { return 0 }
    let input = Array(bytes.dropFirst())
    let whole = strip(input, pieces: [input.count])
    let split = input.isEmpty ? 0 : Int(first) * input.count / 256
    precondition(strip(input, pieces: [split, input.count - split]) == whole, "splitting the input at \(split) changed the outcome")
    if input.count <= 4096 {
        precondition(strip(input, pieces: Array(repeating: 1, count: input.count)) == whole, "byte-at-a-time feeding changed the outcome")
    }
    if case .stored(let output) = whole { precondition(output.count <= input.count + 34, "the output grew by \(output.count - input.count) bytes") }
    return 0
}

private enum Outcome: Equatable {
    case stored([UInt8])
    case refused(MediaRejection)
}

private func strip(_ input: [UInt8], pieces: [Int]) -> Outcome {
    var stripper = MediaStripper(contentType: nil)
    var output: [UInt8] = []
    var offset = 0
    do {
        for piece in pieces {
            output += try stripper.feed(input[offset..<(offset + piece)])
            offset += piece
        }
        output += try stripper.finish()
    } catch {
        return .refused(error)
    }
    if let patch = stripper.patch { output.replaceSubrange(patch.offset..<(patch.offset + patch.bytes.count), with: patch.bytes) }
    return .stored(output)
}
