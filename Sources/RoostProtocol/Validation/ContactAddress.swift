/// Email addresses and phone numbers as Roost stores them (API.md "Conventions"): emails
/// trimmed and lower-cased, phones in E.164. Validation is pragmatic, not RFC 5322: one `@`,
/// a dotted domain, at most 254 characters, no spaces or control characters.
public enum EmailAddress {
    public static func normalize(_ input: String) -> String? {
        let trimmed = input.trimmingOWSAndNewlines().lowercased()
        guard (3...254).contains(trimmed.utf8.count) else { return nil }
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, let local = parts.first, let domain = parts.last,
              (1...64).contains(local.utf8.count), !domain.isEmpty else { return nil }
        guard trimmed.unicodeScalars.allSatisfy({ $0.value > 32 && $0.value != 127 && !"<>()[],;:\\\"".unicodeScalars.contains($0) }) else {
            return nil
        }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty && $0.count <= 63 && !$0.hasPrefix("-") && !$0.hasSuffix("-") }),
              !local.hasPrefix("."), !local.hasSuffix("."), !local.contains("..") else { return nil }
        return trimmed
    }
}

/// Phone numbers in E.164 (`+4512345678`): from common spellings with spaces, dashes, dots,
/// parentheses and a leading `00` instead of `+`; 8 to 15 digits after the `+`, the first not 0.
/// A number without a country code (no `+` or `00`) is refused rather than guessed.
public enum PhoneNumber {
    public static func normalize(_ input: String) -> String? {
        var digits: [Character] = []
        var sawPlus = false
        for (index, character) in input.trimmingOWSAndNewlines().enumerated() {
            switch character {
            case "+" where index == 0: sawPlus = true
            case "0"..."9": digits.append(character)
            case " ", "-", ".", "(", ")", "\u{00A0}": continue
            default: return nil  // letters, a second +, anything else
            }
        }
        if !sawPlus {
            guard digits.count > 2, digits[0] == "0", digits[1] == "0" else { return nil }
            digits.removeFirst(2)
        }
        guard (8...15).contains(digits.count), digits.first != "0" else { return nil }
        return "+" + String(digits)
    }
}

extension String {
    func trimmingOWSAndNewlines() -> String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice.removeFirst() }
        while let last = slice.last, last.isWhitespace { slice.removeLast() }
        return String(slice)
    }
}

/// The email and phone number a request gives (registration, invitations): at least one,
/// each normalised or refused with a 400 naming its field.
public enum ContactAddresses {
    public static func validate(email: String?, phone: String?) throws(APIError) -> (email: String?, phone: String?) {
        guard email != nil || phone != nil else { throw APIError.invalid("give an email or a phone number", "email") }
        var normalized: (email: String?, phone: String?) = (nil, nil)
        if let email {
            guard let value = EmailAddress.normalize(email) else { throw APIError.invalid("email is not a valid address", "email") }
            normalized.email = value
        }
        if let phone {
            guard let value = PhoneNumber.normalize(phone) else {
                throw APIError.invalid("phone must be an international number such as +45 12 34 56 78", "phone")
            }
            normalized.phone = value
        }
        return normalized
    }
}
