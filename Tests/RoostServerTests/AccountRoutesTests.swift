import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct AccountRoutesTests {
    let fixture: APIFixture
    var test: TestServer { fixture.test }
    var pool: ConnectionPool { fixture.pool }
    var client: TestClient { fixture.client }
    var tenant: String { fixture.tenant }
    var closedTenant: String { fixture.closedTenant }

    init() throws {
        fixture = try APIFixture()
    }

    func call(_ method: String, _ path: String, _ body: [String: Any]? = nil, token: String? = nil) async throws -> (Int, [String: Any]) {
        try await fixture.call(method, path, body, token: token)
    }

    func register(_ fields: [String: Any]) async throws -> (Int, [String: Any]) {
        try await fixture.register(fields)
    }

    @Test func registerThenMeThenLogoutEndsTheSession() async throws {
        let (status, body) = try await register(["email": " Anna@Example.ORG "])
        #expect(status == 201)
        let token = try #require(body["token"] as? String)
        let user = try #require(body["user"] as? [String: Any])
        #expect(user["email"] as? String == "anna@example.org")
        #expect(user["phone"] is NSNull)
        #expect(user["email_verified"] as? Bool == false)
        #expect(user["password_hash"] == nil && user["password"] == nil)
        #expect(body["expires_at"] is String)

        let (meStatus, me) = try await call("GET", "/v1/me", token: token)
        #expect(meStatus == 200)
        #expect(me["id"] as? String == user["id"] as? String)
        #expect(me["display_name"] as? String == "Anna")

        #expect(try await call("POST", "/v1/auth/logout", token: token).0 == 204)
        #expect(try await call("GET", "/v1/me", token: token).0 == 401)
        await test.stop()
        pool.close()
    }

    @Test func loginWorksAndEveryMismatchLooksTheSame() async throws {
        _ = try await register(["phone": "0045 12 34 56 78"])
        let (status, body) = try await call("POST", "/v1/auth/login", ["tenant": tenant, "phone": "+45 12345678", "password": "a long enough password"])
        #expect(status == 200)
        #expect((body["user"] as? [String: Any])?["phone"] as? String == "+4512345678")
        #expect(try await call("GET", "/v1/me", token: body["token"] as? String).0 == 200)

        let wrongPassword = try await call("POST", "/v1/auth/login", ["tenant": tenant, "phone": "+4512345678", "password": "not the password"])
        let unknownUser = try await call("POST", "/v1/auth/login", ["tenant": tenant, "phone": "+4599999999", "password": "a long enough password"])
        let unknownTenant = try await call("POST", "/v1/auth/login", ["tenant": "no-such-town", "phone": "+4512345678", "password": "a long enough password"])
        for (status, body) in [wrongPassword, unknownUser, unknownTenant] {
            #expect(status == 401)
            #expect((body["error"] as? [String: Any])?["message"] as? String == "that tenant, identifier and password do not match an account")
        }
        await test.stop()
        pool.close()
    }

    @Test func fiveFailuresForOneIdentifierAreThrottledEvenWithTheRightPassword() async throws {
        _ = try await register(["email": "fay@example.org"])
        for _ in 0..<5 {
            #expect(try await call("POST", "/v1/auth/login", ["tenant": tenant, "email": "fay@example.org", "password": "wrong password!"]).0 == 401)
        }
        let (status, body) = try await call("POST", "/v1/auth/login", ["tenant": tenant, "email": "fay@example.org", "password": "a long enough password"])
        #expect(status == 429)
        #expect((body["error"] as? [String: Any])?["code"] as? String == "rate_limited")
        // Another identifier from the same address is still let in.
        _ = try await register(["email": "gus@example.org"])
        #expect(try await call("POST", "/v1/auth/login", ["tenant": tenant, "email": "gus@example.org", "password": "a long enough password"]).0 == 200)
        await test.stop()
        pool.close()
    }

    @Test func twentyFailuresFromOneAddressAreThrottledWithRetryAfter() async throws {
        for index in 0..<20 {
            _ = try await call("POST", "/v1/auth/login", ["tenant": tenant, "email": "nobody\(index)@example.org", "password": "guessing away"])
        }
        client.send("POST /v1/auth/login HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        _ = await client.readResponse()  // a malformed body is refused before throttling: 400
        let body = try JSONSerialization.data(withJSONObject: ["tenant": tenant, "email": "someone@example.org", "password": "any password"])
        client.send("POST /v1/auth/login HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n" + String(decoding: body, as: UTF8.self))
        let response = try #require(await client.readResponse())
        #expect(response.status == 429)
        let retryAfter = try #require(response.headers["retry-after"].flatMap(Int.init))
        #expect(retryAfter > 0 && retryAfter <= 900)
        await test.stop()
        pool.close()
    }

    @Test func aTakenEmailIsAConflictButAnotherTenantMayHaveIt() async throws {
        #expect(try await register(["email": "bo@example.org"]).0 == 201)
        let (status, body) = try await register(["email": "BO@example.org"])
        #expect(status == 409)
        #expect((body["error"] as? [String: Any])?["field"] as? String == "email")
        let other = "other-\(UUID().uuidString.prefix(8).lowercased())"
        try await pool.withConnection { _ = try TenantStore().create(slug: other, name: "Elsewhere", registration: .open, on: $0) }
        let (elsewhere, _) = try await call("POST", "/v1/auth/register",
                                            ["tenant": other, "email": "bo@example.org", "password": "another long password", "display_name": "Bo"])
        #expect(elsewhere == 201)
        await test.stop()
        pool.close()
    }

    @Test func tokensDoNotCrossTenantsAndForgedOnesFail() async throws {
        let (_, body) = try await register(["email": "cy@example.org"])
        let token = try #require(body["token"] as? String)
        // The same secret part with another tenant's id in front finds nothing.
        var characters = Array(token)
        characters[6] = characters[6] == "A" ? "B" : "A"
        for bad in [String(characters), "rst_" + String(repeating: "A", count: 64), "garbage", token + "x"] {
            #expect(try await call("GET", "/v1/me", token: bad).0 == 401, "\(bad)")
        }
        #expect(try await call("GET", "/v1/me").0 == 401)
        // The scheme in any case, with spaces or tabs around the token; anything else is no token.
        for (header, status) in [("bearer \(token)", 200), ("BEARER\t\(token) \t", 200), ("Bearer   \(token)", 200),
                                 ("Bearer", 401), ("Bearer \t ", 401), ("Bearerx \(token)", 401), ("Basic \(token)", 401),
                                 ("Bearer \(token) extra", 401), ("Bearer \(token)é", 401)] {
            client.send("GET /v1/me HTTP/1.1\r\nAuthorization: \(header)\r\n\r\n")
            let response = try #require(await client.readResponse(), "\(header)")
            #expect(response.status == status, "\(header)")
        }
        await test.stop()
        pool.close()
    }

    @Test(arguments: [
        (["email": "not-an-email"], "email"),
        (["phone": "12345"], "phone"),
        ([String: String](), "email"),
        (["email": "dee@example.org", "password": "short"], "password"),
        (["email": "dee@example.org", "display_name": "  "], "display_name"),
        (["email": "dee@example.org", "display_name": "bell\u{7}"], "display_name"),
    ])
    func badRegistrationsNameTheField(fields: [String: String], field: String) async throws {
        let (status, body) = try await register(fields)
        #expect(status == 400)
        #expect((body["error"] as? [String: Any])?["field"] as? String == field)
        await test.stop()
        pool.close()
    }

    @Test func theProfileCanBeChangedAndHomeIsShownToItsOwner() async throws {
        let token = try #require(try await register(["email": "hal@example.org"]).1["token"] as? String)
        let (before, me) = try await call("GET", "/v1/me", token: token)
        #expect(before == 200)
        #expect(me["home"] is NSNull)
        let (status, updated) = try await call("PATCH", "/v1/me", ["display_name": "  Hal B. ", "home": ["address": "12 Elm St", "notes": "Gate code 1234\nDog: friendly"]], token: token)
        #expect(status == 200)
        #expect(updated["display_name"] as? String == "Hal B.")
        #expect((updated["home"] as? [String: Any])?["address"] as? String == "12 Elm St")
        let (_, again) = try await call("GET", "/v1/me", token: token)
        #expect((again["home"] as? [String: Any])?["notes"] as? String == "Gate code 1234\nDog: friendly")
        let (bad, error) = try await call("PATCH", "/v1/me", ["display_name": String(repeating: "x", count: 101)], token: token)
        #expect(bad == 400)
        #expect((error["error"] as? [String: Any])?["field"] as? String == "display_name")
        #expect(try await call("PATCH", "/v1/me", ["display_name": "x"]).0 == 401)
        await test.stop()
        pool.close()
    }

    @Test func devicesAreRegisteredOnceListedAndRemovedOnlyByTheirOwner() async throws {
        let ida = try #require(try await register(["email": "ida@example.org"]).1["token"] as? String)
        let jon = try #require(try await register(["email": "jon@example.org"]).1["token"] as? String)
        let (created, device) = try await call("POST", "/v1/me/devices", ["platform": "fcm", "token": "fcm-token-1"], token: ida)
        #expect(created == 201)
        let id = try #require(device["id"] as? String)
        let (repeated, same) = try await call("POST", "/v1/me/devices", ["platform": "fcm", "token": "fcm-token-1"], token: ida)
        #expect(repeated == 200)
        #expect(same["id"] as? String == id)
        let (listed, list) = try await call("GET", "/v1/me/devices", token: ida)
        #expect(listed == 200)
        #expect((list["items"] as? [[String: Any]])?.map { $0["id"] as? String } == [id])
        #expect(list["next"] is NSNull)
        #expect((try await call("GET", "/v1/me/devices", token: jon).1["items"] as? [Any])?.isEmpty == true)
        // Another user cannot remove it; a malformed id is simply not found.
        #expect(try await call("DELETE", "/v1/me/devices/\(id)", token: jon).0 == 404)
        #expect(try await call("DELETE", "/v1/me/devices/not-a-uuid", token: ida).0 == 404)
        #expect(try await call("DELETE", "/v1/me/devices/\(id)", token: ida).0 == 204)
        #expect(try await call("DELETE", "/v1/me/devices/\(id)", token: ida).0 == 404)
        let (badPlatform, error) = try await call("POST", "/v1/me/devices", ["platform": "pager", "token": "x"], token: ida)
        #expect(badPlatform == 400)
        #expect((error["error"] as? [String: Any])?["field"] as? String == "platform")
        await test.stop()
        pool.close()
    }

    @Test func aMisspeltFieldIsRefusedNotIgnored() async throws {
        let (status, body) = try await register(["email": "kit@example.org", "display_nmae": "Kit"])
        #expect(status == 400)
        #expect((body["error"] as? [String: Any])?["field"] as? String == "display_nmae")
        await test.stop()
        pool.close()
    }

    @Test func anInviteOnlyTenantRefusesOpenRegistration() async throws {
        let (status, body) = try await call("POST", "/v1/auth/register",
                                            ["tenant": closedTenant, "email": "eve@example.org", "password": "a long enough password", "display_name": "Eve"])
        #expect(status == 403)
        #expect((body["error"] as? [String: Any])?["code"] as? String == "forbidden")
        #expect(try await call("POST", "/v1/auth/register",
                               ["tenant": "nowhere-at-all", "email": "eve@example.org", "password": "a long enough password", "display_name": "Eve"]).0 == 404)
        await test.stop()
        pool.close()
    }
}
