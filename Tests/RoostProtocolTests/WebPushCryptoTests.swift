import Foundation
@testable import RoostProtocol
import Testing

struct WebPushCryptoTests {
    func bytes(_ text: String) throws -> [UInt8] { try #require(Secrets.decodeBase64URL(text)) }

    /// SEC1 DER of a P-256 private key from its scalar and public point (RFC 5915).
    func privateKey(scalar: [UInt8], point: [UInt8]) throws -> P256Key {
        let der: [UInt8] = [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20] + scalar
            + [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0xA1, 0x44, 0x03, 0x42, 0x00] + point
        return try P256Key(privateKeyDER: der)
    }

    /// RFC 8291 Appendix A, byte for byte.
    @Test func theRFC8291ExampleEncryptsToItsPublishedBody() throws {
        let sender = try privateKey(scalar: try bytes("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"),
                                    point: try bytes("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"))
        let body = try WebPushEncryption.encrypt(Array("When I grow up, I want to be a watermelon".utf8),
                                                 p256dh: try bytes("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"),
                                                 auth: try bytes("BTBZMqHH6r4Tts7J_aSIgg"), senderKey: sender, salt: try bytes("DGv6ra1nlYgDCS1FRnbzlw"))
        #expect(Secrets.base64URL(body) == "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
    }

    @Test func keysSurviveStorageAndBadKeysAreRefused() throws {
        let key = try P256Key.generate()
        let again = try P256Key(privateKeyDER: key.privateKeyDER)
        #expect(again.publicPoint == key.publicPoint && key.publicPoint.count == 65 && key.publicPoint[0] == 4)
        #expect(throws: CryptoFailure.self) { try P256Key(publicPoint: [4] + [UInt8](repeating: 1, count: 64)) }  // not on the curve
        #expect(throws: CryptoFailure.self) { try P256Key(publicPoint: Array(key.publicPoint.prefix(33))) }
        #expect(throws: CryptoFailure.self) { try P256Key(privateKeyDER: [0x30, 0x03, 0x02, 0x01, 0x01]) }
        let other = try P256Key.generate()
        #expect(try key.sharedSecret(with: P256Key(publicPoint: other.publicPoint)) == other.sharedSecret(with: P256Key(publicPoint: key.publicPoint)))
        #expect(try key.signES256(Array("x".utf8)).count == 64)
    }

    @Test func sealedBytesOpenOnlyWithTheirKeyAndUnchanged() throws {
        let key = Secrets.randomBytes(32), nonce = Secrets.randomBytes(12)
        var sealed = try AESGCM.seal(Array("secret".utf8), key: key, nonce: nonce)
        #expect(try AESGCM.open(sealed, key: key, nonce: nonce) == Array("secret".utf8))
        #expect(try AESGCM.open(sealed, key: Secrets.randomBytes(32), nonce: nonce) == nil)
        sealed[0] ^= 1
        #expect(try AESGCM.open(sealed, key: key, nonce: nonce) == nil)
    }
}
