import Foundation
import RoostPersistence
@testable import RoostServer
import Testing

/// API.md "Conventions": an optional field with no value is written as `null`, never left out;
/// ids are lower-case; times are RFC 3339 with milliseconds. `@Null` does the first once.
struct APIJSONTests {
    func object<Value: Encodable>(_ value: Value) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(APIJSON.encode(value))) as? [String: Any])
    }

    @Test func aMissingValueIsNullAndAPresentOneIsItself() throws {
        let last = try object(Page(items: [1, 2], next: nil))
        #expect(last.keys.sorted() == ["items", "next"] && last["next"] is NSNull)
        #expect(try object(Page(items: [Int](), next: "c1"))["next"] as? String == "c1")
    }

    struct Sample: Encodable {
        @LowercaseID var id: UUID
        @Null var email: String?
        @Null var seenAt: Date?
        let name: String

        enum CodingKeys: String, CodingKey {
            case id, email, name
            case seenAt = "seen_at"
        }
    }

    @Test func aViewWritesEveryFieldWithLowerCaseIDsAndNulls() throws {
        let id = UUID()
        let empty = try object(Sample(id: id, email: nil, seenAt: nil, name: "Dee"))
        #expect(empty.keys.sorted() == ["email", "id", "name", "seen_at"])
        #expect(empty["id"] as? String == id.uuidString.lowercased())
        #expect(empty["email"] is NSNull && empty["seen_at"] is NSNull)
        let full = try object(Sample(id: id, email: "dee@example.org", seenAt: Date(timeIntervalSince1970: 1_800_000_000.5), name: "Dee"))
        #expect(full["email"] as? String == "dee@example.org")
        #expect(full["seen_at"] as? String == "2027-01-15T08:00:00.500Z")
    }
}
