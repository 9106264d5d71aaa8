import CCrypto

/// Message digests from OpenSSL's libcrypto: no cryptography is written by hand here.
public enum Digest {
    /// SHA-1, used only where a protocol demands it (RFC 6455 §4.2.2, `Sec-WebSocket-Accept`).
    public static func sha1<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        digest(bytes, EVP_sha1(), length: 20)
    }

    /// SHA-256: migration checksums, stored token hashes.
    public static func sha256<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        digest(bytes, EVP_sha256(), length: 32)
    }

    /// Lower-case hexadecimal, two digits a byte.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = ASCII.lowerHexDigits
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes `hex` spells, two digits a byte in either case; nil for an odd count of digits
    /// or anything that is not one.
    public static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = ASCII.hexValue(digits[index]), let low = ASCII.hexValue(digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    private static func digest<Bytes: Sequence<UInt8>>(
        _ bytes: Bytes, _ algorithm: OpaquePointer?, length: Int
    ) -> [UInt8] {
        let input = Array(bytes)
        var output = [UInt8](repeating: 0, count: length)
        var written: UInt32 = 0
        let ok = input.withUnsafeBytes { raw in
            EVP_Digest(raw.baseAddress, raw.count, &output, &written, algorithm, nil)
        }
        // EVP_Digest fails only when libcrypto cannot allocate; there is no sane way on.
        precondition(ok == 1 && Int(written) == length, "libcrypto EVP_Digest failed")
        return output
    }
}

/// SHA-256 over bytes that arrive in pieces (an upload's, as it is stored).
public final class SHA256Stream {
    private let context: OpaquePointer

    public init() {
        // EVP_MD_CTX_new and EVP_DigestInit_ex fail only when libcrypto cannot allocate.
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("libcrypto EVP_MD_CTX_new failed") }
        precondition(EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1, "libcrypto EVP_DigestInit_ex failed")
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    public func update(_ bytes: [UInt8]) {
        let ok = bytes.withUnsafeBytes { EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
        precondition(ok == 1, "libcrypto EVP_DigestUpdate failed")
    }

    /// The digest of everything given; the stream is spent.
    public func finish() -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var written: UInt32 = 0
        precondition(EVP_DigestFinal_ex(context, &output, &written) == 1 && written == 32, "libcrypto EVP_DigestFinal_ex failed")
        return output
    }
}
