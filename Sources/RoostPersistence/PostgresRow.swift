/// The column names of one result, shared by all of its rows.
final class PostgresColumns: Sendable {
    let names: [String]
    let indexByName: [String: Int]

    init(names: [String]) {
        self.names = names
        var index: [String: Int] = [:]
        for (position, name) in names.enumerated() where index[name] == nil {
            index[name] = position
        }
        indexByName = index
    }
}

/// One row, copied out of libpq at once; values are in text format until decoded.
public struct PostgresRow: Sendable {
    let columns: PostgresColumns
    let values: [String?]

    public var columnNames: [String] { columns.names }

    /// The value of a non-NULL column; a NULL or an undecodable value throws, naming the column.
    public func decode<Value: PostgresDecodable>(_ type: Value.Type, _ column: String) throws -> Value {
        let position = try position(of: column)
        guard let text = values[position] else {
            throw decodingError(column, position, "is NULL but \(Value.self) is not optional")
        }
        return try decode(Value.self, text, column, position)
    }

    /// The value of a nullable column: NULL is nil.
    public func decode<Value: PostgresDecodable>(_ type: Value?.Type, _ column: String) throws -> Value? {
        let position = try position(of: column)
        guard let text = values[position] else { return nil }
        return try decode(Value.self, text, column, position)
    }

    /// The value at a column position (for unnamed expressions such as `SELECT count(*)`).
    public func decode<Value: PostgresDecodable>(_ type: Value.Type, at position: Int) throws -> Value {
        guard values.indices.contains(position) else {
            throw decodingError("#\(position)", position, "does not exist (the row has \(values.count) columns)")
        }
        let column = columns.names[position]
        guard let text = values[position] else {
            throw decodingError(column, position, "is NULL but \(Value.self) is not optional")
        }
        return try decode(Value.self, text, column, position)
    }

    public func decode<Value: PostgresDecodable>(_ type: Value?.Type, at position: Int) throws -> Value? {
        guard values.indices.contains(position) else {
            throw decodingError("#\(position)", position, "does not exist (the row has \(values.count) columns)")
        }
        guard let text = values[position] else { return nil }
        return try decode(Value.self, text, columns.names[position], position)
    }

    private func position(of column: String) throws -> Int {
        guard let position = columns.indexByName[column] else {
            throw DatabaseError(
                .decoding, "column \"\(column)\" is not in the result (columns: \(columns.names.joined(separator: ", ")))",
                column: column)
        }
        return position
    }

    private func decode<Value: PostgresDecodable>(
        _ type: Value.Type, _ text: String, _ column: String, _ position: Int
    ) throws -> Value {
        do {
            return try Value(postgresText: text)
        } catch {
            throw decodingError(column, position, "cannot be decoded as \(Value.self): \(error.reason)")
        }
    }

    private func decodingError(_ column: String, _ position: Int, _ problem: String) -> DatabaseError {
        DatabaseError(.decoding, "column \"\(column)\" (index \(position)) \(problem)", column: column)
    }
}

/// The rows of one statement plus the number of rows it changed.
public struct PostgresResult: Sendable {
    public let rows: [PostgresRow]
    /// Rows inserted, updated or deleted (PQcmdTuples); 0 for statements that report none.
    public let affectedRows: Int

    public var first: PostgresRow? { rows.first }
    public var isEmpty: Bool { rows.isEmpty }
}
