import Foundation
import Testing
import RoostProtocol

/// The shared validators every route and command uses (one rule each, written once).
struct ValidationTests {
    @Test func tenantSlugsAreTwoToFortyOfLowercaseDigitsAndDashes() {
        for good in ["oak-lane", "ab", String(repeating: "a", count: 40), "street-42"] { #expect(TenantSlug(good)?.text == good) }
        // A trailing newline, which a `$`-anchored regular expression would let through, is refused too.
        for bad in ["a", String(repeating: "a", count: 41), "Oak", "oak lane", "oak_lane", "oak-lane\n", "", "øak", "oak;drop"] {
            #expect(TenantSlug(bad) == nil, "\(bad.debugDescription)")
        }
    }

    @Test func boundedTextIsTrimmedCountedAndFreeOfControlCharacters() throws {
        #expect(try BoundedText.validate("  Elm Street \n", field: "name", range: 1...20) == "Elm Street")
        #expect(try BoundedText.validate("line one\nline two", field: "text", range: 1...40, allowNewlines: true) == "line one\nline two")
        #expect(BoundedText.trimmed("\u{3000}\u{85} x \u{2028}") == "x")
        let refusals: [(String, Bool)] = [("", false), ("   ", false), ("a\nb", false), ("bell\u{7}", true), (String(repeating: "é", count: 21), false)]
        for (text, newlines) in refusals {
            #expect(throws: APIError.invalid("name must be 1 to 20 characters without control characters", "name")) {
                try BoundedText.validate(text, field: "name", range: 1...20, allowNewlines: newlines)
            }
        }
        #expect(try BoundedText.clientKey("msg-1 ü", field: "client_msg_id") == "msg-1 ü")
        #expect(throws: APIError.self) { try BoundedText.clientKey("tab\there", field: "client_msg_id") }
        #expect(throws: APIError.self) { try BoundedText.clientKey(String(repeating: "k", count: 201), field: "client_msg_id") }
    }

    @Test func namesHaveNoInvisibleOrDirectionChangingCharacters() throws {
        for bad in ["Ann\u{202E}nimda", "\u{2066}Ann\u{2069}", "Ann\u{200E}", "Ann\u{061C}", "An\u{00AD}n", "Ann\u{2060}", "Ann\u{E0041}", "A\u{FEFF}nn"] {
            #expect(throws: APIError.self, "\(bad.unicodeScalars.map { String($0.value, radix: 16) })") {
                try BoundedText.name(bad, field: "display_name", range: 1...100)
            }
        }
        for good in ["Ann Lee", "Zoë", "محمد", "می\u{200C}خواهم", "👨\u{200D}👩\u{200D}👧 The Lees", "李小龙"] {
            #expect(try BoundedText.name(good, field: "display_name", range: 1...100) == good)
        }
        #expect(throws: APIError.self) { try BoundedText.name("Ann\u{7}", field: "display_name", range: 1...100) }
    }

    @Test func locationsAreCheckedAndWrittenAsSortedJSON() throws {
        #expect(try Location(lat: 55.67, lon: 12.5, accuracyM: 8).validatedJSON() == #"{"accuracy_m":8,"lat":55.67,"lon":12.5}"#)
        #expect(try Location(lat: -90, lon: 180).validatedJSON() == #"{"lat":-90,"lon":180}"#)
        let cases: [(Location, String)] = [
            (Location(lat: 90.5, lon: 0), "location.lat"), (Location(lat: .nan, lon: 0), "location.lat"),
            (Location(lat: 0, lon: -180.1), "location.lon"), (Location(lat: 0, lon: 0, accuracyM: -1), "location.accuracy_m"),
            (Location(lat: 0, lon: 0, accuracyM: .infinity), "location.accuracy_m"),
        ]
        for (location, field) in cases {
            do {
                _ = try location.validatedJSON()
                Issue.record("\(location) was accepted")
            } catch {
                #expect(error.field == field)
            }
        }
    }

    @Test func contactAddressesAreNormalisedOrRefusedNamingTheField() throws {
        let both = try ContactAddresses.validate(email: " Ada@Example.ORG ", phone: "0045 12 34 56 78")
        #expect(both.email == "ada@example.org" && both.phone == "+4512345678")
        #expect(throws: APIError.invalid("give an email or a phone number", "email")) { try ContactAddresses.validate(email: nil, phone: nil) }
        do {
            _ = try ContactAddresses.validate(email: nil, phone: "12345678")
            Issue.record("a number without a country code was accepted")
        } catch {
            #expect(error.field == "phone")
        }
    }
}
