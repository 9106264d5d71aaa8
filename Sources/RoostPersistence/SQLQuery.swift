import Foundation

/// A SQL statement whose interpolated values become `$n` parameters, so a value can never
/// be read as SQL: `"SELECT * FROM users WHERE email = \(email)"` sends `... = $1` and the
/// email separately.
///
/// Identifiers (rare: test databases, roles) go through `\(identifier:)`, which quotes them;
/// `\(unsafeRaw:)` splices trusted, constant text and must never see input from outside.
public struct SQLQuery: Sendable, ExpressibleByStringInterpolation {
    public private(set) var sql: String
    public private(set) var binds: [PostgresBind]
    /// An encoding failure met while interpolating (e.g. a JSON value that does not encode);
    /// reported when the query runs, since interpolation itself cannot throw.
    var encodingFailure: String?

    public init(stringLiteral value: String) {
        sql = value
        binds = []
    }

    public init(stringInterpolation: StringInterpolation) {
        sql = stringInterpolation.sql
        binds = stringInterpolation.binds
        encodingFailure = stringInterpolation.encodingFailure
    }

    /// A statement with explicit parameters, for SQL built elsewhere.
    public init(_ sql: String, binds: [PostgresBind]) {
        self.sql = sql
        self.binds = binds
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var binds: [PostgresBind] = []
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
            sql += "$\(binds.count)"
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
