import Foundation
import RoostProtocol
import Synchronization

/// Structured logs: one JSON object a line on stderr (`time`, `level`, `msg`, then fields). A
/// field whose text is a plain decimal number (`8080`, `0.25`, `-3`; not `007`, not a 16-digit
/// id) is written as a JSON number, so log tools can sum and compare it.
public final class Log: Sendable {
    public let level: LogLevel
    private let output = Mutex(FileHandle.standardError)
    /// Where lines go instead of stderr (a test reading what was logged).
    private let capture: (@Sendable (String) -> Void)?

    public init(level: LogLevel) {
        self.level = level
        capture = nil
    }

    /// A log whose lines go to `capture`, for tests.
    package init(level: LogLevel, capture: @escaping @Sendable (String) -> Void) {
        self.level = level
        self.capture = capture
    }

    public func debug(_ message: String, _ fields: [String: String] = [:]) { write(.debug, message, fields) }
    public func info(_ message: String, _ fields: [String: String] = [:]) { write(.info, message, fields) }
    public func warning(_ message: String, _ fields: [String: String] = [:]) { write(.warning, message, fields) }
    public func error(_ message: String, _ fields: [String: String] = [:]) { write(.error, message, fields) }

    private func write(_ messageLevel: LogLevel, _ message: String, _ fields: [String: String]) {
        guard messageLevel >= level else { return }
        var line = "{\"time\":\"\(Self.timestamp())\",\"level\":\"\(messageLevel.rawValue)\",\"msg\":\(JSONString.quote(message))"
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            line += ",\(JSONString.quote(key)):" + (Self.isNumber(value) ? value : JSONString.quote(value))
        }
        line += "}\n"
        if let capture { return capture(line) }
        let data = Data(line.utf8)
        output.withLock { $0.write(data) }
    }

    /// JSON's number grammar without exponents, no leading zeros, at most 15 digits (exact in a
    /// double, so no reader rounds an id).
    static func isNumber(_ text: String) -> Bool {
        var bytes = Substring(text).utf8[...]
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        let whole = bytes.prefix { (0x30...0x39).contains($0) }
        guard !whole.isEmpty, whole.count == 1 || whole.first != 0x30 else { return false }
        var rest = bytes.dropFirst(whole.count)
        var digits = whole.count
        if rest.first == UInt8(ascii: ".") {
            let fraction = rest.dropFirst().prefix { (0x30...0x39).contains($0) }
            guard !fraction.isEmpty else { return false }
            digits += fraction.count
            rest = rest.dropFirst(1 + fraction.count)
        }
        return rest.isEmpty && digits <= 15
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
