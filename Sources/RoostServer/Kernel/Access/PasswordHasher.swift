import CCrypto
import RoostProtocol

/// Passwords as scrypt hashes (RFC 7914) through libcrypto's `EVP_PBE_scrypt`, stored in a
/// self-describing string, `$scrypt$ln=15,r=8,p=1$<salt>$<hash>` (base64url), so that the cost
/// can be raised later: `needsRehash` tells the login path to store a new hash.
public struct PasswordHasher: Sendable {
    public struct Parameters: Sendable, Equatable {
        /// log2 of N, the CPU/memory cost.
        public var logN: UInt8
        public var r: UInt32
        public var p: UInt32
        /// N = 2^15, r = 8, p = 1: 32 MiB and roughly 0.1 s a hash on this hardware class.
        public static let standard = Parameters(logN: 15, r: 8, p: 1)
        public init(logN: UInt8, r: UInt32, p: UInt32) {
            self.logN = logN
            self.r = r
            self.p = p
        }
    }

    public let parameters: Parameters
    public init(parameters: Parameters = .standard) {
        self.parameters = parameters
    }

    /// A new hash with a fresh 16-byte salt.
    public func hash(_ password: String) -> String {
        let salt = Secrets.randomBytes(16)
        let derived = Self.scrypt(Array(password.utf8), salt: salt, parameters)!
        return "$scrypt$ln=\(parameters.logN),r=\(parameters.r),p=\(parameters.p)$\(Secrets.base64URL(salt))$\(Secrets.base64URL(derived))"
    }

    /// Whether `password` matches `stored`, compared in constant time; false for a malformed string.
    public func verify(_ password: String, against stored: String) -> Bool {
        guard let (parameters, salt, expected) = Self.parse(stored),
              let derived = Self.scrypt(Array(password.utf8), salt: salt, parameters, length: expected.count) else {
            return false
        }
        return Secrets.constantTimeEqual(derived, expected)
    }

    /// True when `stored` was made with other parameters than the current ones.
    public func needsRehash(_ stored: String) -> Bool {
        Self.parse(stored)?.0 != parameters
    }

    /// Raw scrypt; nil if libcrypto refuses the parameters.
    static func scrypt(_ password: [UInt8], salt: [UInt8], _ parameters: Parameters, length: Int = 32) -> [UInt8]? {
        var key = [UInt8](repeating: 0, count: length)
        let n = UInt64(1) << UInt64(parameters.logN)
        // 128 · r · N bytes are needed; allow twice that so OpenSSL's own default cap is no obstacle.
        let maxMemory = 256 * UInt64(parameters.r) * n + (1 << 20)
        let ok = password.withUnsafeBufferPointer { pass in
            salt.withUnsafeBufferPointer { saltBytes in
                pass.withMemoryRebound(to: CChar.self) { passChars in
                    EVP_PBE_scrypt(passChars.baseAddress, password.count, saltBytes.baseAddress, salt.count,
                                   n, UInt64(parameters.r), UInt64(parameters.p), maxMemory, &key, length)
                }
            }
        }
        return ok == 1 ? key : nil
    }

    static func parse(_ stored: String) -> (Parameters, [UInt8], [UInt8])? {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "scrypt" else { return nil }
        var values: [String: UInt32] = [:]
        for field in parts[2].split(separator: ",") {
            let pair = field.split(separator: "=")
            guard pair.count == 2, let value = UInt32(pair[1]) else { return nil }
            values[String(pair[0])] = value
        }
        guard let logN = values["ln"], (1...30).contains(logN), let r = values["r"], r > 0, let p = values["p"], p > 0,
              let salt = Secrets.decodeBase64URL(String(parts[3])), let hash = Secrets.decodeBase64URL(String(parts[4])),
              !salt.isEmpty, hash.count >= 16 else { return nil }
        return (Parameters(logN: UInt8(logN), r: r, p: p), salt, hash)
    }
}
