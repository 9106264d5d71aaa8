import Foundation
import RoostProtocol
import Testing

/// JSONValue reads RFC 8259 strictly, and JSONBodyDecoder throws the DecodingErrors Foundation's
/// JSONDecoder does (the API's 400s are built from their kind and coding path).
struct JSONBodyDecoderTests {
    static let accepted: [(String, JSONValue)] = [
        ("{}", .object([:])),
        (" [ ] ", .array([])),
        ("null", .null),
        ("true", .bool(true)),
        ("\t\r\n false \n", .bool(false)),
        ("0", .number("0")),
        ("-0.5e-3", .number("-0.5e-3")),
        ("12E+7", .number("12E+7")),
        (#""""#, .string("")),
        (#""plain, no escapes: é 🚨""#, .string("plain, no escapes: é 🚨")),
        (#""\"\\\/\b\f\n\r\t""#, .string("\"\\/\u{8}\u{c}\n\r\t")),
        (#""\u00e9\u20AC\ud83d\udea8 \u0000""#, .string("é€🚨 \u{0}")),
        (#"{"a":[1,{"b":null}],"c":"d"}"#, .object(["a": .array([.number("1"), .object(["b": .null])]), "c": .string("d")])),
    ]

    static let refused: [String] = [
        "", "   ", "{", "[1,]", "[,1]", #"{"a":1,}"#, #"{"a" 1}"#, #"{a:1}"#, "{'a':1}", "[1 2]", "1 2", "{} x",
        "01", "-", "1.", ".5", "+1", "1e", "1e+", "-a", "NaN", "Infinity", "tru", "nul", "True",
        "\"unterminated", "\"tab\tinside\"", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"",
        "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\ud800x\"", "/* c */ 1", "[1] // c",
    ]

    @Test(arguments: accepted)
    func acceptsWhatRFC8259Allows(text: String, value: JSONValue) throws {
        #expect(try JSONValue.parse(Array(text.utf8)) == value)
        // Foundation reads every one of them too.
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)) != nil)
    }

    @Test(arguments: refused)
    func refusesWhatItDoesNot(text: String) {
        #expect(throws: JSONSyntaxError.self) { try JSONValue.parse(Array(text.utf8)) }
    }

    @Test func refusesBytesThatAreNotUTF8InStrings() {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC0, 0x80, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xE2, 0x82, 0x22],
                                [0x22, 0x5C, 0x6E, 0xF8, 0x22]] {
            #expect(throws: JSONSyntaxError.self, "\(bytes)") { try JSONValue.parse(bytes) }
        }
    }

    @Test func refusesANameTwiceInOneObjectButNotInTwo() throws {
        let error = try #require(throws: JSONSyntaxError.self) { try JSONValue.parse(Array(#"{"a":1,"b":2,"a":3}"#.utf8)) }
        #expect(error.reason.contains(#""a""#))
        #expect(error.offset == 13)
        #expect(try JSONValue.parse(Array(#"[{"a":1},{"a":2}]"#.utf8)) == .array([.object(["a": .number("1")]), .object(["a": .number("2")])]))
    }

    @Test func nestsAsDeepAsItsLimitAndNoDeeper() throws {
        let depth = JSONValue.maxDepth
        let deepest = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect(throws: Never.self) { try JSONValue.parse(Array(deepest.utf8)) }
        let deeper = String(repeating: #"{"a":"#, count: depth + 1) + "1" + String(repeating: "}", count: depth + 1)
        #expect(throws: JSONSyntaxError.self) { try JSONValue.parse(Array(deeper.utf8)) }
        // A hostile body of a million brackets is refused without following them.
        #expect(throws: JSONSyntaxError.self) { try JSONValue.parse([UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)) }
    }

    // MARK: - Decoding

    struct Body: Decodable, Equatable {
        let name: String
        let count: Int
        let ratio: Double
        let flag: Bool
        let note: String?
        let tags: [String]
        let nested: Nested?

        struct Nested: Decodable, Equatable {
            let seq: Int64
            let points: [Point]
        }

        struct Point: Decodable, Equatable {
            let lat: Double
        }
    }

    private func decode(_ text: String) throws -> Body {
        try JSONBodyDecoder().decode(Body.self, from: Array(text.utf8))
    }

    /// The error's kind and the field its path names, as RequestContext.decodeJSON reads them.
    private func failure(_ text: String) -> (kind: String, path: String) {
        do {
            _ = try decode(text)
            return ("decoded", "")
        } catch let error as DecodingError {
            let name: ([any CodingKey]) -> String = { $0.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".") }
            switch error {
            case .keyNotFound(let key, let context): return ("keyNotFound", name(context.codingPath + [key]))
            case .valueNotFound(_, let context): return ("valueNotFound", name(context.codingPath))
            case .typeMismatch(_, let context): return ("typeMismatch", name(context.codingPath))
            case .dataCorrupted(let context): return ("dataCorrupted", name(context.codingPath))
            @unknown default: return ("unknown", "")
            }
        } catch {
            return ("\(error)", "")
        }
    }

    @Test func decodesEveryKindOfField() throws {
        let body = try decode(#"""
            {"name":"Rosa \u2764","count":1e2,"ratio":5,"flag":false,"note":null,"tags":["a","b"],
             "nested":{"seq":9007199254740993,"points":[{"lat":-0.5},{"lat":51.5e0}]}}
            """#)
        #expect(body == Body(name: "Rosa ❤", count: 100, ratio: 5, flag: false, note: nil, tags: ["a", "b"],
                             nested: Body.Nested(seq: 9_007_199_254_740_993, points: [Body.Point(lat: -0.5), Body.Point(lat: 51.5)])))
        let bare = try decode(#"{"name":"","count":-0,"ratio":0.25,"flag":true,"tags":[]}"#)
        #expect(bare.note == nil && bare.nested == nil && bare.count == 0)
    }

    @Test(arguments: [
        (#"{"count":1,"ratio":1,"flag":true,"tags":[]}"#, "keyNotFound", "name"),
        (#"{"name":null,"count":1,"ratio":1,"flag":true,"tags":[]}"#, "valueNotFound", "name"),
        (#"{"name":7,"count":1,"ratio":1,"flag":true,"tags":[]}"#, "typeMismatch", "name"),
        (#"{"name":"x","count":"1","ratio":1,"flag":true,"tags":[]}"#, "typeMismatch", "count"),
        (#"{"name":"x","count":1.5,"ratio":1,"flag":true,"tags":[]}"#, "dataCorrupted", "count"),
        (#"{"name":"x","count":9223372036854775808,"ratio":1,"flag":true,"tags":[]}"#, "dataCorrupted", "count"),
        (#"{"name":"x","count":1,"ratio":1e400,"flag":true,"tags":[]}"#, "dataCorrupted", "ratio"),
        (#"{"name":"x","count":1,"ratio":1,"flag":1,"tags":[]}"#, "typeMismatch", "flag"),
        (#"{"name":"x","count":1,"ratio":1,"flag":true,"tags":["a",2]}"#, "typeMismatch", "tags.1"),
        (#"{"name":"x","count":1,"ratio":1,"flag":true,"tags":{}}"#, "typeMismatch", "tags"),
        (#"{"name":"x","count":1,"ratio":1,"flag":true,"tags":[],"nested":{"seq":1,"points":[{"lat":null}]}}"#, "valueNotFound", "nested.points.0.lat"),
        (#"{"name":"x","count":1,"ratio":1,"flag":true,"tags":[],"nested":{"points":[]}}"#, "keyNotFound", "nested.seq"),
        (#"{"name":"x","count":1,"ratio":1,"flag":true,"tags":[],"nested":[]}"#, "typeMismatch", "nested"),
        (#"[]"#, "typeMismatch", ""),
        (#"null"#, "valueNotFound", ""),
        (#"{"name":"x""#, "dataCorrupted", ""),
    ])
    func failsAsFoundationDoes(text: String, kind: String, path: String) throws {
        let ours = failure(text)
        #expect(ours.kind == kind && ours.path == path, "\(text): \(ours)")
        // The same kind and path from Foundation's JSONDecoder, where they agree on the text.
        do {
            _ = try JSONDecoder().decode(Body.self, from: Data(text.utf8))
            Issue.record("Foundation decoded \(text)")
        } catch let error as DecodingError {
            switch error {
            case .keyNotFound: #expect(kind == "keyNotFound")
            case .valueNotFound: #expect(kind == "valueNotFound")
            case .typeMismatch: #expect(kind == "typeMismatch")
            case .dataCorrupted: #expect(kind == "dataCorrupted")
            @unknown default: Issue.record("\(error)")
            }
        }
    }

    /// Foundation's reader forgives a trailing comma (and then says a field is missing); this one
    /// says the body is not JSON. Both are a 400.
    @Test func aTrailingCommaIsNotJSON() {
        #expect(failure(#"{"name":"x",}"#) == ("dataCorrupted", ""))
        #expect(failure(#"{"name":"x","count":1,"ratio":1,"flag":true,"tags":["a",]}"#) == ("dataCorrupted", ""))
    }

    @Test func unkeyedContainersStepOnlyPastWhatTheyRead() throws {
        struct Pair: Decodable {
            let first: Int?
            let rest: [String]
            init(from decoder: any Decoder) throws {
                var list = try decoder.unkeyedContainer()
                #expect(list.count == 3)
                first = try list.decodeNil() ? nil : try list.decode(Int.self)
                #expect(try list.decodeNil() == false)
                #expect(throws: DecodingError.self) { try list.decode(Int.self) }
                #expect(list.currentIndex == 1)
                rest = [try list.decode(String.self), try list.decode(String.self)]
                #expect(list.isAtEnd)
                #expect(throws: DecodingError.self) { try list.decodeNil() }
            }
        }
        let pair = try JSONBodyDecoder().decode(Pair.self, from: Array(#"[null,"a","b"]"#.utf8))
        #expect(pair.first == nil && pair.rest == ["a", "b"])
    }
}
