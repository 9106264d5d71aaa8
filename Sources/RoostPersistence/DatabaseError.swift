/// The one error type of RoostPersistence: a code plus what PostgreSQL or libpq said.
///
/// Server errors keep their SQLSTATE as the code; failures that happen on the client side
/// (no connection, pool deadline, decoding) have codes of their own in the `roost.` space,
/// so callers can tell "unique violation" from "database unreachable" without parsing text.
public struct DatabaseError: Error, Sendable, CustomStringConvertible {
    /// A SQLSTATE (five characters) or one of Roost's client-side codes.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // Server SQLSTATEs the service layer reacts to (PostgreSQL appendix A).
        public static let uniqueViolation = Code("23505")
        public static let foreignKeyViolation = Code("23503")
        public static let notNullViolation = Code("23502")
        public static let checkViolation = Code("23514")
        public static let exclusionViolation = Code("23P01")
        public static let serializationFailure = Code("40001")
        public static let deadlockDetected = Code("40P01")
        public static let insufficientPrivilege = Code("42501")
        public static let undefinedTable = Code("42P01")
        public static let invalidTextRepresentation = Code("22P02")
        public static let queryCanceled = Code("57014")
        public static let characterNotInRepertoire = Code("22021")
        public static let stringDataRightTruncation = Code("22001")

        // Client-side codes.
        /// The connection broke while in use (backend terminated, server restarted, network).
        public static let connectionLost = Code("roost.connection_lost")
        /// No connection could be opened: the server is down, refuses us, or the address is wrong.
        public static let unreachable = Code("roost.unreachable")
        /// The pool had no connection to lend before the caller's deadline (the API's 503).
        public static let unavailable = Code("roost.unavailable")
        /// The connection string could not be parsed.
        public static let invalidConnectionString = Code("roost.invalid_connection_string")
        /// A column could not be decoded into the requested Swift type.
        public static let decoding = Code("roost.decoding")
        /// A migration file is missing, misnamed, or was edited after it was applied.
        public static let migration = Code("roost.migration")
        /// libpq reported a failure without a SQLSTATE (out of memory, protocol confusion).
        public static let client = Code("roost.client")
    }

    public var code: Code
    public var message: String
    public var detail: String?
    public var hint: String?
    public var constraint: String?
    public var table: String?
    public var column: String?
    /// The SQLSTATE the server sent, also when `code` is a client-side one (e.g. 57P01 on a lost connection).
    public var sqlState: String?

    public init(
        _ code: Code, _ message: String, detail: String? = nil, hint: String? = nil,
        constraint: String? = nil, table: String? = nil, column: String? = nil, sqlState: String? = nil
    ) {
        self.code = code
        self.message = message
        self.detail = detail
        self.hint = hint
        self.constraint = constraint
        self.table = table
        self.column = column
        self.sqlState = sqlState
    }

    /// True for failures after which the caller may retry on another connection.
    public var isConnectionFailure: Bool {
        code == .connectionLost || code == .unreachable || code == .unavailable
    }

    /// True for failures a transaction may retry from the start (SQLSTATE class 40).
    public var isRetryableTransactionFailure: Bool {
        code == .serializationFailure || code == .deadlockDetected
    }

    public var description: String {
        var text = "\(message) [\(code)]"
        if let detail { text += " detail: \(detail)" }
        if let constraint { text += " constraint: \(constraint)" }
        if let hint { text += " hint: \(hint)" }
        return text
    }
}
