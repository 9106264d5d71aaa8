import Foundation

/// A SQL statement whose interpolated values become `$n` parameters, so a value can never
/// be read as SQL: `"SELECT * FROM users WHERE email = \(email)"` sends `... = $1` and the
/// email separately.
///
/// Identifiers (rare: test databases, roles) go through `\(identifier:)`, which quotes them;
/// `\(unsafeRaw:)` splices trusted, constant text and must never see input from outside;
/// `\(fragment:)` splices another interpolated query, its parameters renumbered.
public struct SQLQuery: Sendable, ExpressibleByStringInterpolation {
    public private(set) var sql: String
    public private(set) var binds: [PostgresBind]
    /// Where each parameter's `$n` starts in `sql` (UTF-8 offsets), for splicing this query
    /// into another; nil for SQL built elsewhere (`init(_:binds:)`), which cannot be spliced.
    var placeholderOffsets: [Int]?
    /// An encoding failure met while interpolating (e.g. a JSON value that does not encode);
    /// reported when the query runs, since interpolation itself cannot throw.
    var encodingFailure: String?

    public init(stringLiteral value: String) {
        sql = value
        binds = []
        placeholderOffsets = []
    }

    public init(stringInterpolation: StringInterpolation) {
        sql = stringInterpolation.sql
        binds = stringInterpolation.binds
        placeholderOffsets = stringInterpolation.placeholderOffsets
        encodingFailure = stringInterpolation.encodingFailure
    }

    /// A statement with explicit parameters, for SQL built elsewhere.
    public init(_ sql: String, binds: [PostgresBind]) {
        self.sql = sql
        self.binds = binds
        placeholderOffsets = binds.isEmpty ? [] : nil
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var binds: [PostgresBind] = []
        var placeholderOffsets: [Int] = []
        var encodingFailure: String?

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            binds.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            sql += literal
        }

        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value) {
            appendParameter(value)
        }

        /// An optional value, NULL when nil (its own overload so the compiler knows an optional is meant).
        public mutating func appendInterpolation<Wrapped: PostgresEncodable>(_ value: Wrapped?) {
            appendParameter(value)
        }

        private mutating func appendParameter<Value: PostgresEncodable>(_ value: Value) {
            do {
                binds.append(try value.bind)
            } catch {
                encodingFailure = encodingFailure ?? "parameter $\(binds.count + 1): \(error)"
                binds.append(PostgresBind(type: Value.postgresType, text: nil))
            }
            placeholderOffsets.append(sql.utf8.count)
            sql += "$\(binds.count)"
        }

        /// Another query's text and parameters, its `$n` renumbered to follow this one's.
        public mutating func appendInterpolation(fragment: SQLQuery) {
            guard let offsets = fragment.placeholderOffsets else {
                encodingFailure = encodingFailure ?? "a query built from explicit SQL text cannot be spliced into another"
                return
            }
            if let failure = fragment.encodingFailure { encodingFailure = encodingFailure ?? failure }
            let text = fragment.sql.utf8
            var copied = text.startIndex
            for (index, offset) in offsets.enumerated() {
                let start = text.index(text.startIndex, offsetBy: offset)
                sql += fragment.sql[copied..<start]
                placeholderOffsets.append(sql.utf8.count)
                sql += "$\(binds.count + index + 1)"
                // The fragment's own placeholder here reads `$<index + 1>`.
                copied = text.index(start, offsetBy: 1 + String(index + 1).utf8.count)
            }
            sql += fragment.sql[copied...]
            binds += fragment.binds
        }

        /// A quoted identifier: `"name"`, with embedded quotes doubled.
        public mutating func appendInterpolation(identifier: String) {
            sql += "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }

        /// Trusted SQL text, spliced as is. Never pass a value that came from outside.
        public mutating func appendInterpolation(unsafeRaw text: String) {
            sql += text
        }
    }
}
