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
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
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
