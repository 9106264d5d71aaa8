import Foundation
import RoostProtocol
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
        var line = "{\"time\":\"\(Self.timestamp())\",\"level\":\"\(messageLevel.rawValue)\",\"msg\":\(JSONString.quote(message))"
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            line += ",\(JSONString.quote(key)):\(JSONString.quote(value))"
        }
        line += "}\n"
        let data = Data(line.utf8)
        output.withLock { $0.write(data) }
    }

    static func timestamp(_ date: Date = Date()) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

}

public enum LogLevel: String, Sendable, Comparable, CaseIterable {
    case debug, info, warning, error

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
