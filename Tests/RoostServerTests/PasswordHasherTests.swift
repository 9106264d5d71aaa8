@testable import RoostServer
import RoostProtocol
import Testing

struct PasswordHasherTests {
    /// RFC 7914 §12, the first vector: "" / "" with N = 16, r = 1, p = 1.
    @Test func scryptMatchesTheRFCVector() {
        let key = PasswordHasher.scrypt([], salt: [], .init(logN: 4, r: 1, p: 1), length: 64)
        #expect(key.map(Digest.hex) == "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906")
    }

    @Test func aHashVerifiesItsPasswordAndNoOther() {
        let hasher = PasswordHasher(parameters: .init(logN: 10, r: 8, p: 1))
        let stored = hasher.hash("correct horse battery staple")
        #expect(stored.hasPrefix("$scrypt$ln=10,r=8,p=1$"))
        #expect(hasher.verify("correct horse battery staple", against: stored))
        #expect(!hasher.verify("correct horse battery stapler", against: stored))
        #expect(!hasher.verify("", against: stored))
        // A fresh salt each time.
        #expect(hasher.hash("correct horse battery staple") != stored)
    }

    @Test func weakerStoredParametersAskForARehash() {
        let old = PasswordHasher(parameters: .init(logN: 8, r: 8, p: 1)).hash("a long enough password")
        let current = PasswordHasher(parameters: .init(logN: 10, r: 8, p: 1))
        #expect(current.verify("a long enough password", against: old))
        #expect(current.needsRehash(old))
        #expect(!current.needsRehash(current.hash("a long enough password")))
    }

    @Test(arguments: ["", "plain", "$scrypt$ln=99,r=8,p=1$AAAA$AAAA", "$scrypt$ln=10,r=8$AAAA$AAAAAAAAAAAAAAAAAAAAAA", "$bcrypt$x$y$z",
                      "$scrypt$ln=10,r=8,p=1$!!$AAAAAAAAAAAAAAAAAAAAAA"])
    func malformedStoredHashesNeverVerify(stored: String) {
        #expect(!PasswordHasher(parameters: .init(logN: 10, r: 8, p: 1)).verify("anything at all", against: stored))
    }

    @Test func theStandardCostIsAtLeastWhatTheIssueAsks() {
        let standard = PasswordHasher.Parameters.standard
        #expect(standard.logN >= 15 && standard.r >= 8 && standard.p >= 1)
    }
}
