import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

private struct Place: Codable, Equatable, Sendable {
    var lat: Double
    var lon: Double
    var label: String?
}

/// Sends a value as a parameter and reads it back through the server.
private func echo<Value: PostgresCodable>(_ value: Value, on connection: PostgresConnection) throws -> Value {
    try connection.query("SELECT \(value) AS v").rows[0].decode(Value.self, "v")
}

@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct PostgresValueTests {
    let connection: PostgresConnection

    init() throws {
        connection = try TestDatabase.connect()
    }

    @Test func integersRoundTripAtTheirLimits() throws {
        for value in [0, 1, -1, Int.max, Int.min] { #expect(try echo(value, on: connection) == value) }
        for value in [Int64.max, Int64.min, 42] { #expect(try echo(value, on: connection) == value) }
        for value in [Int32.max, Int32.min] { #expect(try echo(value, on: connection) == value) }
    }

    @Test func booleansAndDoublesRoundTrip() throws {
        #expect(try echo(true, on: connection) == true)
        #expect(try echo(false, on: connection) == false)
        for value in [0.1, -2.5e-300, 1.7976931348623157e308, 55.676098, .infinity, -.infinity] {
            #expect(try echo(value, on: connection) == value)
        }
        #expect(try echo(Double.nan, on: connection).isNaN)
    }

    @Test(arguments: [
        "", "plain", "it's \"quoted\"", #"back\slash \\ and \n not a newline"#, "'; DROP TABLE users; --",
        "Søren Ærø · 日本語 · 🚨🏠", "line\nbreak\ttab", "$1 $2 ?", String(repeating: "x", count: 100_000),
    ])
    func stringsComeBackByteIdentical(_ value: String) throws {
        let back = try echo(value, on: connection)
        #expect(Array(back.utf8) == Array(value.utf8))
    }

    @Test func aStringWithANulCharacterIsRefusedNotTruncated() throws {
        #expect {
            try connection.query("SELECT \("before\u{0}after") AS v")
        } throws: { error in
            (error as? DatabaseError)?.code == .characterNotInRepertoire
        }
    }

    @Test func uuidsAndBytesRoundTrip() throws {
        let id = UUID()
        #expect(try echo(id, on: connection) == id)
        let bytes = Data((0...255).map { UInt8($0) })
        #expect(try echo(bytes, on: connection) == bytes)
        #expect(try echo(Data(), on: connection) == Data())
    }

    @Test func timestampsKeepMicroseconds() throws {
        let dates = [
            Date(timeIntervalSince1970: 1_795_258_800.123456),
            Date(timeIntervalSince1970: 0),
            Date(timeIntervalSince1970: -1_234_567_890.000001),
            Date(timeIntervalSince1970: 253_402_300_799.999999),  // 9999-12-31T23:59:59.999999Z
        ]
        for date in dates {
            let back = try echo(date, on: connection)
            #expect((back.timeIntervalSince1970 * 1e6).rounded() == (date.timeIntervalSince1970 * 1e6).rounded())
        }
        // The server's own clock reading parses too, in UTC.
        let now = try connection.query("SELECT now() AS t").rows[0].decode(Date.self, "t")
        #expect(abs(now.timeIntervalSinceNow) < 300)
        let fixed = try connection.query("SELECT '2026-11-21 10:00:00.5+02'::timestamptz AS t").rows[0].decode(Date.self, "t")
        #expect(fixed == Date(timeIntervalSince1970: 1_795_248_000.5))
    }

    @Test func jsonRoundTripsThroughCodable() throws {
        let place = Place(lat: 55.6761, lon: 12.5683, label: "Nørrebro \"corner\" \\ 🏠")
        #expect(try echo(JSONB(place), on: connection).value == place)
        let stored = try connection.query("SELECT \(JSONB(place))->>'label' AS label").rows[0].decode(String.self, "label")
        #expect(stored == place.label)
    }

    @Test func arraysRoundTripWithAwkwardElements() throws {
        let texts = ["", "NULL", "a,b", "{braces}", "quote\"d", #"back\slash"#, "space d", "日本", #"ends in \"#, #"\""#,
                     "🚨 \"siren\" \\ é", "e\u{301}"]
        #expect(try echo(texts, on: connection) == texts)
        #expect(try echo([String](), on: connection) == [])
        let ids = [UUID(), UUID()]
        #expect(try echo(ids, on: connection) == ids)
        let count = try connection.query("SELECT cardinality(\(texts)) AS n").rows[0].decode(Int.self, "n")
        #expect(count == texts.count)
    }

    @Test func nullDecodesAsNilAndNilEncodesAsNull() throws {
        let none: String? = nil
        let row = try connection.query("SELECT \(none) AS v, \(none) IS NULL AS is_null").rows[0]
        #expect(try row.decode(String?.self, "v") == nil)
        #expect(try row.decode(Bool.self, "is_null"))
        let some: UUID? = UUID()
        #expect(try connection.query("SELECT \(some) AS v").rows[0].decode(UUID?.self, "v") == some)
    }

    @Test func aDecodingErrorNamesTheColumn() throws {
        let row = try connection.query("SELECT 'abc'::text AS word, NULL::int AS missing").rows[0]
        #expect {
            try row.decode(Int.self, "word")
        } throws: { error in
            let error = error as? DatabaseError
            return error?.code == .decoding && error?.column == "word" && error!.message.contains("\"word\"")
        }
        #expect {
            try row.decode(Int.self, "missing")
        } throws: { error in
            (error as? DatabaseError)?.message.contains("\"missing\" (index 1) is NULL") == true
        }
        #expect {
            try row.decode(Int.self, "nope")
        } throws: { error in
            (error as? DatabaseError)?.column == "nope"
        }
    }

    @Test func injectionTextIsDataNotSQL() throws {
        let table = try TestDatabase.makeScratchTable("v text", on: connection)
        defer { TestDatabase.dropScratchTable(table, on: connection) }
        let hostile = "x'); DROP TABLE \(table); --"
        try connection.query("INSERT INTO \(unsafeRaw: table) (v) VALUES (\(hostile))")
        let stored = try connection.query("SELECT v FROM \(unsafeRaw: table)").rows.map { try $0.decode(String.self, "v") }
        #expect(stored == [hostile])
    }

    @Test func aSplicedFragmentKeepsItsParametersInOrderAndLeavesDollarTextAlone() throws {
        // Ten parameters before the fragment, so `$1`..`$3` inside it become `$11`..`$13`.
        let inner: SQLQuery = "\(2) * \(3) + length(\("$1$2")) + length('$1')"
        let query: SQLQuery = """
            SELECT \(1) + \(1) + \(1) + \(1) + \(1) + \(1) + \(1) + \(1) + \(1) + \(1) AS ten,
                   \(fragment: inner) AS inner, \("after") AS after\(fragment: "")
            """
        #expect(query.binds.count == 14)
        let row = try connection.query(query).rows[0]
        #expect(try row.decode(Int.self, "ten") == 10)
        #expect(try row.decode(Int.self, "inner") == 2 * 3 + 4 + 2)
        #expect(try row.decode(String.self, "after") == "after")
        // A fragment spliced twice, and one inside another, still number in order.
        let twice: SQLQuery = "SELECT \(fragment: "\("a") || \(fragment: "\("b")")") || (\(fragment: inner))::text AS v"
        #expect(try connection.query(twice).rows[0].decode(String.self, "v") == "ab12")
    }

    @Test func theTextPostgreSQLReceivesNumbersEachParameterInOrder() {
        let inner: SQLQuery = "f(\(2), '$9')"
        let query: SQLQuery = "SELECT \(1), \(fragment: inner), \("three") WHERE x = \(4)"
        #expect(query.sql == "SELECT $1, f($2, '$9'), $3 WHERE x = $4")
        #expect(query.binds.map(\.text) == ["1", "2", "three", "4"])
        #expect(SQLQuery("SELECT $1::int", binds: [PostgresBind(type: .int8, text: "1")]).sql == "SELECT $1::int")
    }

    @Test func aNULInSplicedSQLTextIsRefusedBeforeAnythingIsSent() throws {
        // A parameter's place is a NUL while the query is built: spliced text holding one would
        // read as a parameter, so it is refused (PostgreSQL's text cannot hold one either).
        for query: SQLQuery in ["SELECT 1 AS \(unsafeRaw: "a\0b")", "SELECT 1 AS \(identifier: "a\0b")",
                                SQLQuery("SELECT \0 1", binds: [])] {
            #expect {
                try connection.query(query)
            } throws: { error in
                (error as? DatabaseError)?.message.contains("NUL") == true
            }
        }
    }

    @Test func aFragmentOfExplicitSQLIsRefusedWhenSpliced() throws {
        let explicit = SQLQuery("$1::int", binds: [PostgresBind(type: .int8, text: "1")])
        #expect {
            try connection.query("SELECT \(fragment: explicit) AS v")
        } throws: { error in
            (error as? DatabaseError)?.message.contains("cannot be spliced") == true
        }
    }
}
