import CCrypto
import Foundation

/// Random bytes, MACs and comparisons for secrets, all from libcrypto.
public enum Secrets {
    /// Bytes from libcrypto's CSPRNG.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        // RAND_bytes fails only if the CSPRNG could not be seeded: no secret can be made then.
        precondition(RAND_bytes(&bytes, Int32(count)) == 1, "libcrypto RAND_bytes failed")
        return bytes
    }

    /// `count` (1–9) uniformly random decimal digits from the CSPRNG, for codes people type:
    /// draws at or above the last whole multiple of 10^count below 2^32 are drawn again.
    public static func randomDigits(_ count: Int) -> String {
        precondition((1...9).contains(count), "1 to 9 digits")
        let range = (0..<count).reduce(UInt32(1)) { value, _ in value * 10 }
        let limit = UInt32.max - UInt32.max % range
        while true {
            let value = randomBytes(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            if value < limit {
                let digits = String(value % range)
                return String(repeating: "0", count: count - digits.count) + digits
            }
        }
    }

    /// HMAC-SHA256 (RFC 2104 with SHA-256): webhook and bridge request signatures.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                HMAC(EVP_sha256(), keyBytes.baseAddress, Int32(key.count), messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                     message.count, &output, &length)
            }
        }
        precondition(ok != nil && length == 32, "libcrypto HMAC failed")
        return output
    }

    /// Equality that takes the same time wherever the first difference is (CRYPTO_memcmp).
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { left in
            b.withUnsafeBytes { right in CRYPTO_memcmp(left.baseAddress, right.baseAddress, a.count) == 0 }
        }
    }

    /// Base64url without padding (RFC 4648 §5): tokens that travel in URLs and headers.
    public static func base64URL(_ bytes: [UInt8]) -> String {
        let alphabet = Base64URL.alphabet
        var text: [UInt8] = []
        text.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            text.append(alphabet[Int(group >> 18 & 63)])
            text.append(alphabet[Int(group >> 12 & 63)])
            text.append(alphabet[Int(group >> 6 & 63)])
            text.append(alphabet[Int(group & 63)])
            index += 3
        }
        // One or two bytes left make two or three characters, with no padding.
        let left = bytes.count - index
        if left > 0 {
            let group = UInt32(bytes[index]) << 16 | (left == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            text.append(alphabet[Int(group >> 18 & 63)])
            text.append(alphabet[Int(group >> 12 & 63)])
            if left == 2 { text.append(alphabet[Int(group >> 6 & 63)]) }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Reads base64url without padding; nil for any other character (`+`, `/`, `=` included)
    /// or a length no encoding has (one character over a whole group). A request's bearer token
    /// passes through here, so it reads the bytes directly (no Foundation string rewriting).
    public static func decodeBase64URL(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { Base64URL.decode($0) }
    }
}

/// The tables of `Secrets`' base64url codec.
private enum Base64URL {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each byte's value in the alphabet, or 0xFF when it is not in it.
    static let values: [UInt8] = {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in alphabet.enumerated() { values[Int(character)] = UInt8(value) }
        return values
    }()

    static func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        let values = Self.values
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count * 3 / 4)
        var group: UInt32 = 0
        var held = 0
        for character in text {
            let value = values[Int(character)]
            guard value != 0xFF else { return nil }
            group = group << 6 | UInt32(value)
            held += 1
            if held == 4 {
                bytes.append(UInt8(truncatingIfNeeded: group >> 16))
                bytes.append(UInt8(truncatingIfNeeded: group >> 8))
                bytes.append(UInt8(truncatingIfNeeded: group))
                group = 0
                held = 0
            }
        }
        // Two characters hold one byte (12 bits, 4 spare), three hold two (18 bits, 2 spare).
        if held == 2 {
            bytes.append(UInt8(truncatingIfNeeded: group >> 4))
        } else if held == 3 {
            bytes.append(UInt8(truncatingIfNeeded: group >> 10))
            bytes.append(UInt8(truncatingIfNeeded: group >> 2))
        }
        return bytes
    }
}
