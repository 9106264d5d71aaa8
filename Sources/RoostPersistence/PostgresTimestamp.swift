import Foundation
import RoostProtocol

/// timestamptz in text form, with microseconds kept exactly (PostgreSQL's own resolution).
///
/// Every connection runs with `TimeZone=UTC` and `DateStyle=ISO`, so the server writes
/// `2026-11-21 10:00:00.123456+00`. Formatting and parsing are done by hand: a
/// DateFormatter rounds to milliseconds and is slow on a hot path.
enum PostgresTimestamp {
    static func format(_ date: Date) -> String {
        let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        let (days, microsOfDay) = floorDivide(micros, 86_400_000_000)
        let (year, month, day) = CivilCalendar.date(days: days)
        let seconds = microsOfDay / 1_000_000
        let fraction = microsOfDay % 1_000_000
        var text = pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
        text += " " + pad(seconds / 3600, 2) + ":" + pad(seconds / 60 % 60, 2) + ":" + pad(seconds % 60, 2)
        text += "." + pad(fraction, 6) + "+00"
        return text
    }

    static func parse(_ text: String) throws(PostgresDecodingFailure) -> Date {
        if text == "infinity" { return .distantFuture }
        if text == "-infinity" { return .distantPast }
        var scanner = DigitScanner(Array(text.utf8))
        guard
            let year = scanner.number(), scanner.skip("-"),
            let month = scanner.number(), scanner.skip("-"),
            let day = scanner.number(), scanner.skip(" ") || scanner.skip("T"),
            let hour = scanner.number(), scanner.skip(":"),
            let minute = scanner.number(), scanner.skip(":"),
            let second = scanner.number()
        else { throw PostgresDecodingFailure("'\(text)' is not an ISO timestamp") }
        var micros: Int64 = 0
        if scanner.skip(".") {
            var digits = 0
            while let digit = scanner.digit() {
                if digits < 6 { micros = micros * 10 + Int64(digit) }
                digits += 1
            }
            guard digits > 0 else { throw PostgresDecodingFailure("'\(text)' has an empty fraction") }
            for _ in digits..<max(digits, 6) { micros *= 10 }
        }
        var offsetSeconds: Int64 = 0
        if let sign = scanner.sign() {
            guard let hours = scanner.number() else { throw PostgresDecodingFailure("'\(text)' has a bad zone") }
            var offset = hours * 3600
            if scanner.skip(":"), let minutes = scanner.number() { offset += minutes * 60 }
            if scanner.skip(":"), let secs = scanner.number() { offset += secs }
            offsetSeconds = sign * offset
        }
        guard scanner.atEnd, (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else {
            throw PostgresDecodingFailure("'\(text)' is not an ISO timestamp in UTC")
        }
        let days = CivilCalendar.days(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        let total = seconds * 1_000_000 + micros
        return Date(timeIntervalSince1970: Double(total) / 1_000_000)
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let q = a / b, r = a % b
        return r < 0 ? (q - 1, r + b) : (q, r)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

/// A cursor over ASCII digits and separators, used by the timestamp parser.
private struct DigitScanner {
    let bytes: [UInt8]
    var index = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    mutating func digit() -> Int? {
        guard index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 else { return nil }
        defer { index += 1 }
        return Int(bytes[index] - 48)
    }

    mutating func number() -> Int64? {
        var value: Int64 = 0
        var count = 0
        while count < 9, let digit = digit() {
            value = value * 10 + Int64(digit)
            count += 1
        }
        return count == 0 ? nil : value
    }

    mutating func skip(_ character: Unicode.Scalar) -> Bool {
        guard index < bytes.count, bytes[index] == UInt8(character.value) else { return false }
        index += 1
        return true
    }

    mutating func sign() -> Int64? {
        if skip("+") { return 1 }
        if skip("-") { return -1 }
        return nil
    }
}
