import CLibPQ

/// How to reach PostgreSQL: a libpq connection string (URI or `key=value` form) plus the
/// settings Roost always adds.
public struct ConnectionConfiguration: Sendable {
    /// `postgres://user:pass@host:port/db?...` or `host=/run/x dbname=roost ...` (libpq syntax).
    public var connectionString: String
    /// Shown in `pg_stat_activity`; a value in the connection string wins.
    public var applicationName: String
    /// Seconds libpq waits for a connection to open; a value in the connection string wins.
    public var connectTimeoutSeconds: Int

    public init(connectionString: String, applicationName: String = "roost", connectTimeoutSeconds: Int = 5) {
        self.connectionString = connectionString
        self.applicationName = applicationName
        self.connectTimeoutSeconds = connectTimeoutSeconds
    }

    /// Checks the string with libpq's own parser, so a malformed URL fails before any connect.
    public func validate() throws {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &errorMessage) else {
            let reason = errorMessage.map { String(cString: $0) } ?? "it could not be parsed"
            if let errorMessage { PQfreemem(errorMessage) }
            throw DatabaseError(
                .invalidConnectionString,
                "invalid database connection string: \(reason.trimmingWhitespace())",
                hint: "use a libpq URI such as postgres://user:password@host:5432/dbname")
        }
        PQconninfoFree(options)
    }

    /// The keyword/value pairs given to `PQconnectdbParams`; the string comes last so it overrides.
    var keywordsAndValues: [(String, String)] {
        [
            ("application_name", applicationName),
            ("connect_timeout", String(connectTimeoutSeconds)),
            ("client_encoding", "UTF8"),
            // Detect a dead peer on an idle pooled connection within about a minute.
            ("keepalives", "1"),
            ("keepalives_idle", "30"),
            ("keepalives_interval", "10"),
            ("keepalives_count", "3"),
            ("dbname", connectionString),
        ]
    }

    /// A description safe for logs: the password, if any, is replaced.
    public var redacted: String {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &errorMessage) else {
            if let errorMessage { PQfreemem(errorMessage) }
            return "(unparsable connection string)"
        }
        defer { PQconninfoFree(options) }
        var parts: [String] = []
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                let name = String(cString: keyword)
                parts.append("\(name)=\(name == "password" ? "***" : String(cString: value))")
            }
            option += 1
        }
        return parts.joined(separator: " ")
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
