import Foundation

/// timestamptz in text form, with microseconds kept exactly (PostgreSQL's own resolution).
///
/// Every connection runs with `TimeZone=UTC` and `DateStyle=ISO`, so the server writes
/// `2026-11-21 10:00:00.123456+00`. Formatting and parsing are done by hand: a
/// DateFormatter rounds to milliseconds and is slow on a hot path.
enum PostgresTimestamp {
    static func format(_ date: Date) -> String {
        let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        let (days, microsOfDay) = floorDivide(micros, 86_400_000_000)
        let (year, month, day) = civil(fromDays: days)
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
        let days = days(fromCivil: year, month, day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        let total = seconds * 1_000_000 + micros
        return Date(timeIntervalSince1970: Double(total) / 1_000_000)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (era arithmetic, valid for all years).
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of `days(fromCivil:)`.
    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
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
