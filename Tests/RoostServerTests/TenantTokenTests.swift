import Foundation
import RoostProtocol
@testable import RoostServer
import Testing

struct TenantTokenTests {
    @Test func aTokenCarriesItsTenantAndOnlyItsHashIsKept() throws {
        let tenant = UUID()
        let (text, token) = TenantToken.generate(tenant: tenant)
        #expect(text.hasPrefix("rst_"))
        #expect(text.count == 68)
        let parsed = try #require(TenantToken(text))
        #expect(parsed == token)
        #expect(parsed.tenant == tenant)
        #expect(parsed.hash == Digest.sha256(Array(text.utf8)))
        #expect(TenantToken.generate(tenant: tenant).text != text)
    }

    @Test(arguments: ["", "rst_", "rst_short", "bearer", "rbk_" + String(repeating: "A", count: 64),
                      "rst_" + String(repeating: "!", count: 64), "rst_" + String(repeating: "A", count: 65)])
    func malformedTokensAreRefused(text: String) {
        #expect(TenantToken(text) == nil)
    }

    @Test func aTokenOfOneKindIsNotAcceptedAsAnother() {
        let (invitation, _) = TenantToken.generate(TenantToken.invitation, tenant: UUID())
        #expect(invitation.hasPrefix("riv_"))
        #expect(TenantToken(invitation) == nil)
        #expect(TenantToken(invitation, prefix: TenantToken.invitation) != nil)
    }

    @Test func alteringTheTenantPartChangesTheHash() throws {
        let (text, token) = TenantToken.generate(tenant: UUID())
        var characters = Array(text)
        characters[5] = characters[5] == "A" ? "B" : "A"
        let altered = try #require(TenantToken(String(characters)))
        #expect(altered.tenant != token.tenant)
        #expect(altered.hash != token.hash)
    }
}
