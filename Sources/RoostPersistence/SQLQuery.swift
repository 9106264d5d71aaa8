import Foundation

/// A SQL statement whose interpolated values become `$n` parameters, so a value can never
/// be read as SQL: `"SELECT * FROM users WHERE email = \(email)"` sends `... = $1` and the
/// email separately.
///
/// Identifiers (rare: test databases, roles) go through `\(identifier:)`, which quotes them;
/// `\(unsafeRaw:)` splices trusted, constant text and must never see input from outside;
/// `\(fragment:)` splices another interpolated query, its parameters renumbered.
///
/// While a query is built, each parameter's place in its text is a NUL (`slot`), which
/// PostgreSQL's statement text can never hold, and the `$n` are written only when `sql` is
/// read. Splicing a fragment is then one append, with nothing renumbered. `PostgresConnection`
/// reads `sql` only to prepare a statement (once a connection, for each text) or to run one
/// unprepared: a statement built again and again, a chat line's, is never numbered again.
public struct SQLQuery: Sendable, ExpressibleByStringInterpolation {
    /// The text with a `slot` for each parameter, or, for SQL built elsewhere, with its `$n`.
    private(set) var template: String
    public private(set) var binds: [PostgresBind]
    /// False for SQL built elsewhere (`init(_:binds:)`): its `$n` are written out, and it cannot be spliced.
    let slotted: Bool
    /// An encoding failure met while interpolating (e.g. a JSON value that does not encode);
    /// reported when the query runs, since interpolation itself cannot throw.
    var encodingFailure: String?

    /// What stands for a parameter in `template`.
    static let slot: UInt8 = 0

    public init(stringLiteral value: String) {
        template = value
        binds = []
        slotted = true
    }

    public init(stringInterpolation: StringInterpolation) {
        template = stringInterpolation.template
        binds = stringInterpolation.binds
        slotted = true
        encodingFailure = stringInterpolation.encodingFailure
    }

    /// A statement with explicit parameters, for SQL built elsewhere.
    public init(_ sql: String, binds: [PostgresBind]) {
        template = sql
        self.binds = binds
        slotted = binds.isEmpty
        if sql.utf8.contains(Self.slot) { encodingFailure = "the SQL text contains a NUL character" }
    }

    /// The statement's text as PostgreSQL takes it, each parameter's `$n` written in.
    public var sql: String {
        guard slotted, !binds.isEmpty else { return template }
        let text = template.utf8
        var numbered = ""
        numbered.reserveCapacity(text.count + 3 * binds.count)
        var copied = text.startIndex
        var number = 0
        for index in text.indices where text[index] == Self.slot {
            number += 1
            numbered += template[copied..<index]
            numbered += "$\(number)"
            copied = text.index(after: index)
        }
        numbered += template[copied...]
        return numbered
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var template = ""
        var binds: [PostgresBind] = []
        var encodingFailure: String?

        public init(literalCapacity: Int, interpolationCount: Int) {
            template.reserveCapacity(literalCapacity + interpolationCount)
            binds.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            assert(!literal.utf8.contains(SQLQuery.slot), "SQL text cannot hold a NUL")
            template += literal
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
            template += "\0"
        }

        /// Another query's text and parameters, which then number after this one's.
        public mutating func appendInterpolation(fragment: SQLQuery) {
            guard fragment.slotted else {
                encodingFailure = encodingFailure ?? "a query built from explicit SQL text cannot be spliced into another"
                return
            }
            if let failure = fragment.encodingFailure { encodingFailure = encodingFailure ?? failure }
            template += fragment.template
            binds += fragment.binds
        }

        /// A quoted identifier: `"name"`, with embedded quotes doubled.
        public mutating func appendInterpolation(identifier: String) {
            appendText("\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\"")
        }

        /// Trusted SQL text, spliced as is. Never pass a value that came from outside.
        public mutating func appendInterpolation(unsafeRaw text: String) {
            appendText(text)
        }

        /// Text spliced as SQL, refused if it holds a NUL, which would read as a parameter's place.
        private mutating func appendText(_ text: String) {
            if text.utf8.contains(SQLQuery.slot) {
                encodingFailure = encodingFailure ?? "SQL text spliced into a query contains a NUL character"
                return
            }
            template += text
        }
    }
}
