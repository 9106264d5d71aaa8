import RoostProtocol
import Testing

struct ContactAddressTests {
    @Test(arguments: [
        ("Anna@Example.ORG", "anna@example.org"),
        ("  bo.berg+watch@mail.example.dk \n", "bo.berg+watch@mail.example.dk"),
        ("søren@eksempel.dk", "søren@eksempel.dk"),
    ])
    func emailsAreTrimmedAndLowerCased(input: String, expected: String) {
        #expect(EmailAddress.normalize(input) == expected)
    }

    @Test(arguments: [
        "", "anna", "anna@", "@example.org", "anna@example", "anna@@example.org", "an na@example.org",
        "anna@example..org", "anna@-example.org", ".anna@example.org", "an..na@example.org", "anna@exa mple.org",
        "anna@example.org\u{0}", "<anna@example.org>", "a'; DROP TABLE users; --@example.org",
    ])
    func malformedEmailsAreRefused(input: String) {
        #expect(EmailAddress.normalize(input) == nil)
    }

    @Test func aTooLongEmailIsRefused() {
        // Labels within 63 characters: only the total length is at fault.
        let domain = String(repeating: "b", count: 62) + "." + String(repeating: "c", count: 62) + "." + String(repeating: "d", count: 60) + ".org"
        let long = String(repeating: "a", count: 64) + "@" + domain
        #expect(long.count == 255)
        #expect(EmailAddress.normalize(long) == nil)
        #expect(EmailAddress.normalize(String(long.dropFirst())) != nil)
    }

    @Test(arguments: [
        ("+45 12 34 56 78", "+4512345678"),
        ("0045 12-34-56-78", "+4512345678"),
        ("+1 (415) 555.0100", "+14155550100"),
        ("+44 20 7946 0958", "+442079460958"),
        ("  +4512345678  ", "+4512345678"),
    ])
    func commonSpellingsBecomeE164(input: String, expected: String) {
        #expect(PhoneNumber.normalize(input) == expected)
    }

    @Test(arguments: [
        "", "+", "12345678", "+45 1234", "+1234567890123456", "+45 12 34 AB 78", "++4512345678",
        "+45+12345678", "+0512345678", "00", "tel:+4512345678", "+45 12345678; DROP",
    ])
    func malformedPhonesAreRefused(input: String) {
        #expect(PhoneNumber.normalize(input) == nil)
    }
}
