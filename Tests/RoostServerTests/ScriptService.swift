import Foundation
import RoostTestSupport

/// A real server the delivery tests talk to, written in Python (scripts/lib/smtp_server.py,
/// push_service.py): started with a scratch folder of its own, ready once it prints its JSON
/// line, and each later line one thing it received.
final class ScriptService: @unchecked Sendable {
    let process: RunningProcess
    let directory: URL
    /// The first line: ports, the CA it made, whatever the script announces.
    let ready: [String: Any]

    /// `arguments` follow `serve DIR` (push_service.py's `--http2`).
    init(_ script: String, readyKey: String, arguments: [String] = []) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("roost-\(script)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process = try RunningProcess(SpecTool.python!, [SpecTool.root.appendingPathComponent("scripts/lib/\(script)").path, "serve", directory.path] + arguments,
                                     environment: [:])
        guard let line = await process.waitForLine(containing: "\"\(readyKey)\""),
              let ready = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            process.signal(SIGKILL)
            throw SubprocessError("\(script) did not start: \(process.output)")
        }
        self.ready = ready
    }

    /// Every line after the first, as JSON.
    var lines: [[String: Any]] {
        process.output.split(separator: "\n").dropFirst().compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    func stop() async {
        process.signal(SIGTERM)
        _ = await process.wait()
        try? FileManager.default.removeItem(at: directory)
    }
}
