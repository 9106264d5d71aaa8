import CCrypto
import Foundation

/// What went wrong inside libcrypto, or with a key given to it.
public struct CryptoFailure: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A P-256 key pair (libcrypto's EVP_PKEY): VAPID's signing key, the sender's one-time key of
/// each Web Push message, or (public only) a browser's subscription key.
public final class P256Key: @unchecked Sendable {
    // Never mutated after init; libcrypto allows concurrent use of a key for signing and deriving.
    let key: OpaquePointer

    private init(_ key: OpaquePointer) { self.key = key }
    deinit { EVP_PKEY_free(key) }

    /// A fresh key pair from libcrypto's CSPRNG.
    public static func generate() throws -> P256Key {
        guard let key = roost_p256_generate() else { throw CryptoFailure("P-256 key generation failed") }
        return P256Key(key)
    }

    /// A public key from its 65-byte uncompressed point (`0x04 || x || y`), which must lie on the curve.
    public convenience init(publicPoint: [UInt8]) throws {
        guard publicPoint.count == 65, publicPoint[0] == 4 else { throw CryptoFailure("a P-256 public key is 65 bytes beginning 0x04") }
        guard let key = publicPoint.withUnsafeBufferPointer({ roost_p256_public_key($0.baseAddress, $0.count) }) else {
            ERR_clear_error()
            throw CryptoFailure("not a point on P-256")
        }
        self.init(key)
    }

    /// A key pair from `privateKeyDER`'s bytes (as `privateKeyDER` made them).
    public convenience init(privateKeyDER der: [UInt8]) throws {
        let key = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_AutoPrivateKey(nil, &cursor, buffer.count)
        }
        guard let key, EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
            ERR_clear_error()
            throw CryptoFailure("not a P-256 private key")
        }
        self.init(key)
    }

    /// The uncompressed public point, 65 bytes (the end of its SubjectPublicKeyInfo).
    public var publicPoint: [UInt8] {
        var point = [UInt8](repeating: 0, count: 65)
        guard point.withUnsafeMutableBufferPointer({ roost_p256_public_point(key, $0.baseAddress) }) == 1 else {
            return Array(der(i2d_PUBKEY).suffix(65))
        }
        return point
    }

    /// The private key as DER, for storing.
    public var privateKeyDER: [UInt8] { der(i2d_PrivateKey) }

    /// What one of libcrypto's `i2d_*` encoders writes: asked for the length, then into a buffer of it.
    private func der(_ encode: (OpaquePointer?, UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Int(max(0, encode(key, nil))))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = encode(key, &cursor)
        }
        return bytes
    }

    /// ECDH with `peer`: the shared x coordinate, 32 bytes.
    public func sharedSecret(with peer: P256Key) throws -> [UInt8] {
        guard let context = EVP_PKEY_CTX_new(key, nil) else { throw CryptoFailure("EVP_PKEY_CTX_new failed") }
        defer { EVP_PKEY_CTX_free(context) }
        var length = 0
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer(context, peer.key) == 1,
              EVP_PKEY_derive(context, nil, &length) == 1 else { throw CryptoFailure("ECDH failed") }
        var secret = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_derive(context, &secret, &length) == 1 else { throw CryptoFailure("ECDH failed") }
        return Array(secret.prefix(length))
    }

    /// ECDSA over SHA-256 as JWS's ES256 wants it: r and s, 32 bytes each (RFC 7518 §3.4).
    public func signES256(_ message: [UInt8]) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoFailure("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        var length = 0
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1,
              EVP_DigestSign(context, nil, &length, message, message.count) == 1 else { throw CryptoFailure("ECDSA failed") }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &der, &length, message, message.count) == 1 else { throw CryptoFailure("ECDSA failed") }
        let signature = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, length)
        }
        guard let signature else { throw CryptoFailure("ECDSA gave no signature") }
        defer { ECDSA_SIG_free(signature) }
        var r: OpaquePointer?, s: OpaquePointer?
        ECDSA_SIG_get0(signature, &r, &s)
        var raw = [UInt8](repeating: 0, count: 64)
        guard BN_bn2binpad(r, &raw, 32) == 32, raw.withUnsafeMutableBufferPointer({ BN_bn2binpad(s, $0.baseAddress! + 32, 32) }) == 32 else {
            throw CryptoFailure("ECDSA signature out of range")
        }
        return raw
    }
}

/// AES-GCM (libcrypto): Web Push's content encryption (AES-128) and the sealing of the VAPID
/// private key at rest (AES-256). The 16-byte tag follows the ciphertext.
public enum AESGCM {
    public static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]) throws -> [UInt8] {
        guard let context = EVP_CIPHER_CTX_new() else { throw CryptoFailure("EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        guard nonce.count == 12, let cipher = cipher(for: key) else { throw CryptoFailure("AES-GCM takes a 16- or 32-byte key and a 12-byte nonce") }
        var output = [UInt8](repeating: 0, count: plaintext.count + 16)
        var length: Int32 = 0, final: Int32 = 0
        guard EVP_EncryptInit_ex(context, cipher, nil, key, nonce) == 1,
              EVP_EncryptUpdate(context, &output, &length, plaintext, Int32(plaintext.count)) == 1,
              output.withUnsafeMutableBufferPointer({ EVP_EncryptFinal_ex(context, $0.baseAddress! + Int(length), &final) }) == 1,
              output.withUnsafeMutableBufferPointer({ EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, $0.baseAddress! + Int(length + final)) }) == 1
        else { throw CryptoFailure("AES-GCM encryption failed") }
        return Array(output.prefix(Int(length + final) + 16))
    }

    /// The plaintext, or nil when the tag does not match (a wrong key or altered bytes).
    public static func open(_ sealed: [UInt8], key: [UInt8], nonce: [UInt8]) throws -> [UInt8]? {
        guard sealed.count >= 16 else { return nil }
        guard let context = EVP_CIPHER_CTX_new() else { throw CryptoFailure("EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        guard nonce.count == 12, let cipher = cipher(for: key) else { throw CryptoFailure("AES-GCM takes a 16- or 32-byte key and a 12-byte nonce") }
        let ciphertext = Array(sealed.dropLast(16))
        var tag = Array(sealed.suffix(16))
        var output = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var length: Int32 = 0, final: Int32 = 0
        guard EVP_DecryptInit_ex(context, cipher, nil, key, nonce) == 1,
              EVP_DecryptUpdate(context, &output, &length, ciphertext, Int32(ciphertext.count)) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, 16, &tag) == 1 else { throw CryptoFailure("AES-GCM decryption failed") }
        let verified = output.withUnsafeMutableBufferPointer { EVP_DecryptFinal_ex(context, $0.baseAddress! + Int(length), &final) } == 1
        ERR_clear_error()
        return verified ? Array(output.prefix(Int(length + final))) : nil
    }

    private static func cipher(for key: [UInt8]) -> OpaquePointer? {
        switch key.count {
        case 16: EVP_aes_128_gcm()
        case 32: EVP_aes_256_gcm()
        default: nil
        }
    }
}

/// HKDF with HMAC-SHA-256 (RFC 5869), for outputs of at most 32 bytes (one block): all Web
/// Push needs.
public enum HKDF {
    public static func extract(salt: [UInt8], inputKey: [UInt8]) -> [UInt8] {
        Secrets.hmacSHA256(key: salt, message: inputKey)
    }

    public static func expand(_ pseudoRandomKey: [UInt8], info: [UInt8], count: Int) -> [UInt8] {
        precondition(count <= 32, "one HMAC block")
        return Array(Secrets.hmacSHA256(key: pseudoRandomKey, message: info + [1]).prefix(count))
    }
}

/// Web Push message encryption (RFC 8291) in the aes128gcm content coding (RFC 8188): one
/// record, the sender's one-time public key as the key id.
public enum WebPushEncryption {
    /// The largest plaintext that fits the 4,096-byte record push services take.
    public static let maxPlaintext = 3993

    /// The request body for `plaintext` to the subscription (`p256dh` public point, 16-byte
    /// `auth` secret). `senderKey` and `salt` are fresh unless a test fixes them.
    public static func encrypt(_ plaintext: [UInt8], p256dh: [UInt8], auth: [UInt8],
                               senderKey: P256Key? = nil, salt: [UInt8]? = nil) throws -> [UInt8] {
        guard plaintext.count <= maxPlaintext else { throw CryptoFailure("a Web Push payload is at most \(maxPlaintext) bytes") }
        guard auth.count == 16 else { throw CryptoFailure("a Web Push auth secret is 16 bytes") }
        let receiver = try P256Key(publicPoint: p256dh)
        let sender = try senderKey ?? P256Key.generate()
        let salt = salt ?? Secrets.randomBytes(16)
        let senderPoint = sender.publicPoint
        let shared = try sender.sharedSecret(with: receiver)
        // RFC 8291 §3.3–3.4: the auth secret and both public keys bind the content key.
        let keyInfo = Array("WebPush: info".utf8) + [0] + p256dh + senderPoint
        let inputKey = HKDF.expand(HKDF.extract(salt: auth, inputKey: shared), info: keyInfo, count: 32)
        let pseudoRandomKey = HKDF.extract(salt: salt, inputKey: inputKey)
        let contentKey = HKDF.expand(pseudoRandomKey, info: Array("Content-Encoding: aes128gcm".utf8) + [0], count: 16)
        let nonce = HKDF.expand(pseudoRandomKey, info: Array("Content-Encoding: nonce".utf8) + [0], count: 12)
        // RFC 8188: the last (only) record ends with the delimiter 0x02.
        let record = try AESGCM.seal(plaintext + [2], key: contentKey, nonce: nonce)
        let recordSize: UInt32 = 4096
        let header = salt + [UInt8(recordSize >> 24), UInt8(recordSize >> 16 & 0xFF), UInt8(recordSize >> 8 & 0xFF), UInt8(recordSize & 0xFF)]
            + [UInt8(senderPoint.count)] + senderPoint
        return header + record
    }
}

/// VAPID (RFC 8292): the `Authorization` header that identifies Roost to a push service, a JWT
/// signed with ES256 for the endpoint's origin, valid for at most 24 hours.
public enum VAPID {
    public static func authorization(audience: String, subject: String, expires: Date, key: P256Key) throws -> String {
        let header = Secrets.base64URL(Array(#"{"typ":"JWT","alg":"ES256"}"#.utf8))
        let claims = "{\"aud\":\(JSONString.quote(audience)),\"exp\":\(Int(expires.timeIntervalSince1970)),\"sub\":\(JSONString.quote(subject))}"
        let signingInput = header + "." + Secrets.base64URL(Array(claims.utf8))
        let signature = try key.signES256(Array(signingInput.utf8))
        return "vapid t=\(signingInput).\(Secrets.base64URL(signature)), k=\(Secrets.base64URL(key.publicPoint))"
    }
}
