import Foundation
import Synchronization

/// Structured logs: one JSON object a line on stderr (`time`, `level`, `msg`, then fields).
public final class Log: Sendable {
    public let level: LogLevel
    private let output = Mutex(FileHandle.standardError)

    public init(level: LogLevel) {
        self.level = level
    }

    public func debug(_ message: String, _ fields: [String: String] = [:]) { write(.debug, message, fields) }
    public func info(_ message: String, _ fields: [String: String] = [:]) { write(.info, message, fields) }
    public func warning(_ message: String, _ fields: [String: String] = [:]) { write(.warning, message, fields) }
    public func error(_ message: String, _ fields: [String: String] = [:]) { write(.error, message, fields) }

    private func write(_ messageLevel: LogLevel, _ message: String, _ fields: [String: String]) {
        guard messageLevel >= level else { return }
        var line = "{\"time\":\"\(Self.timestamp())\",\"level\":\"\(messageLevel.rawValue)\",\"msg\":\(Self.quote(message))"
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            line += ",\(Self.quote(key)):\(Self.quote(value))"
        }
        line += "}\n"
        let data = Data(line.utf8)
        output.withLock { $0.write(data) }
    }

    static func timestamp(_ date: Date = Date()) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped.
    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
