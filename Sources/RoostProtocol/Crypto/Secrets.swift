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
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    public static func decodeBase64URL(_ text: String) -> [UInt8]? {
        guard text.utf8.allSatisfy({ ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 95 }) else {
            return nil
        }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        return Data(base64Encoded: standard).map(Array.init)
    }
}
