import Foundation

#if canImport(Glibc)
import Glibc
#endif

// Client worker processes (`connections`, `alert --receivers`): this binary started again with a
// worker scenario, given its share of the members' tokens through a file, telling its parent on
// its standard output when its connections are up, and holding them until its standard input closes.

/// Writes `tokens` one a line where the workers read their shares (`--tokens-file`); the
/// caller unlinks it once the workers have read it.
func writeTokensFile(_ tokens: [String], _ name: String) throws -> String {
    let path = NSTemporaryDirectory() + "roost-bench-\(name)-\(getpid())"
    try tokens.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
    return path
}

/// A worker's share: the `--token-range` lines of `--tokens-file`.
func workerTokens(_ options: Options) throws -> [String] {
    guard let path = options.tokensFile else { throw BenchError("--tokens-file is required") }
    let tokens = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    guard options.tokenRange.upperBound <= tokens.count else { throw BenchError("--token-range exceeds the tokens") }
    return Array(tokens[options.tokenRange])
}

/// Starts a worker: this binary with `arguments`; its standard input (closed to stop it) and output.
func spawnWorker(_ arguments: [String]) throws -> (process: Process, input: Pipe, output: FileHandle) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = arguments
    let input = Pipe(), output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    return (process, input, output.fileHandleForReading)
}

/// The worker's first line, once its connections are up: "live COUNT SECONDS RETRIES".
func announceLive(_ clients: StreamClients, live: Int, since started: UInt64) {
    FileHandle.standardOutput.write(Data("live \(live) \(Double(now() - started) / 1e9) \(clients.retries.load(ordering: .relaxed))\n".utf8))
}

/// Reads a worker's "live" line; throws when it ended without one.
func awaitLive(_ output: FileHandle) throws -> (live: Int, seconds: Double, retries: Int) {
    let line = readLine(from: output) ?? ""
    let fields = line.split(separator: " ")
    guard fields.count == 4, fields[0] == "live", let live = Int(fields[1]), let seconds = Double(fields[2]), let retries = Int(fields[3]) else {
        throw BenchError("a worker ended without its connections: '\(line)'")
    }
    return (live, seconds, retries)
}

/// One line from `handle` without its newline, read a byte at a time so that nothing after it
/// is taken from the pipe; nil at the end.
func readLine(from handle: FileHandle) -> String? {
    var line: [UInt8] = []
    while true {
        let data = handle.readData(ofLength: 1)
        guard let byte = data.first else { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
        if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
        line.append(byte)
    }
}
