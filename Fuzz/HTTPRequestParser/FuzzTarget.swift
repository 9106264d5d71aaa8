// libFuzzer target for HTTPRequestParser. Compiled together with RoostProtocol's sources by
// scripts/fuzz (one module), so it reaches internal API without an import.
//
// Beyond "never traps", it checks the parser's central promise: feeding the input whole and
// feeding it in two pieces split at a fuzzer-chosen point yield exactly the same results.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPRequestParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = bytes.first else { return 0 }
    var limits = HTTPRequestParser.Limits()
    // Small limits so the fuzzer reaches every limit path quickly.
    limits.maxRequestLineBytes = 64 + Int(first % 64)
    limits.maxHeaderBytes = 256
    limits.maxBodyBytes = 512
    // Requests to /u... stream their bodies (uploads); the rest are read whole.
    limits.streamsBody = { $0.target.path.hasPrefix("/u") }
    let input = Array(bytes.dropFirst())
    let whole = drain(input, pieces: [input.count], limits: limits)
    let split = input.isEmpty ? 0 : Int(first) % (input.count + 1)
    let twoPieces = drain(input, pieces: [split, input.count - split], limits: limits)
    let bytewise = drain(input, pieces: Array(repeating: 1, count: input.count), limits: limits)
    precondition(whole == twoPieces, "splitting the input at \(split) changed the parse")
    precondition(whole == bytewise, "byte-at-a-time feeding changed the parse")
    return 0
}

private func drain(_ input: [UInt8], pieces: [Int], limits: HTTPRequestParser.Limits) -> [HTTPRequestParser.Next] {
    var parser = HTTPRequestParser(limits: limits)
    var results: [HTTPRequestParser.Next] = []
    var offset = 0
    for piece in pieces {
        parser.feed(input[offset..<(offset + piece)])
        offset += piece
        while true {
            let next = parser.next()
            if next == .needMore { break }
            precondition(next != .bodyPart([]), "an empty body piece")
            // A streamed body's pieces follow the feeding: consecutive ones compare as one.
            if case .bodyPart(let part) = next, case .bodyPart(let earlier)? = results.last {
                results[results.count - 1] = .bodyPart(earlier + part)
                continue
            }
            results.append(next)
            if case .failure = next { return results }
        }
    }
    return results
}
