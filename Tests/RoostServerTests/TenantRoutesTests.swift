import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct TenantRoutesTests {
    static let token = "operator-secret-\(UUID().uuidString)"

    func makeServer(adminToken: String? = TenantRoutesTests.token) throws -> (TestServer, ConnectionPool) {
        _ = try TestDatabase.migratedConnection()
        let pool = ConnectionPool(configuration: TestDatabase.configuration(), options: .init(maxConnections: 2))
        let server = try TestServer(extraRoutes: { TenantRoutes.add(to: &$0, pool: pool, adminToken: adminToken) })
        return (server, pool)
    }

    func post(_ client: TestClient, _ body: String, token: String? = TenantRoutesTests.token) async -> TestClient.Response? {
        let auth = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        client.send("POST /v1/admin/tenants HTTP/1.1\r\n\(auth)Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        return await client.readResponse()
    }

    @Test func theOperatorCreatesAndListsTenants() async throws {
        let (test, pool) = try makeServer()
        defer { pool.close() }
        let client = try TestClient(port: test.port)
        let slug = "elm-\(UUID().uuidString.prefix(8).lowercased())"
        let created = try #require(await post(client, #"{"slug":"\#(slug)","name":"Elm Street Watch","registration":"invite_only"}"#))
        #expect(created.status == 201)
        let tenant = try JSONSerialization.jsonObject(with: Data(created.body)) as? [String: Any]
        #expect(tenant?["slug"] as? String == slug)
        #expect(tenant?["registration"] as? String == "invite_only")
        #expect((tenant?["id"] as? String).flatMap(UUID.init(uuidString:)) != nil)
        #expect((tenant?["created_at"] as? String)?.hasSuffix("Z") == true)

        let again = try #require(await post(client, #"{"slug":"\#(slug)","name":"Elm again"}"#))
        #expect(again.status == 409)
        #expect(again.text.contains(#""code":"conflict""#))

        // The shared test database holds every other test's tenants too: page until ours shows.
        var after = ""
        var found = false
        for _ in 0..<1000 where !found {
            client.send("GET /v1/admin/tenants?limit=200\(after) HTTP/1.1\r\nAuthorization: Bearer \(Self.token)\r\n\r\n")
            let list = try #require(await client.readResponse())
            #expect(list.status == 200)
            #expect(list.text.contains(#""next":"#))
            found = list.text.contains(#""slug":"\#(slug)""#)
            let page = try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any]
            guard let next = page?["next"] as? String else { break }
            after = "&cursor=\(next)"
        }
        #expect(found)
        await test.stop()
    }

    @Test func theOperatorRenamesATenantAndSwitchesItsRegistration() async throws {
        let (test, pool) = try makeServer()
        defer { pool.close() }
        let client = try TestClient(port: test.port)
        let slug = "sw-\(UUID().uuidString.prefix(8).lowercased())"
        #expect(await post(client, #"{"slug":"\#(slug)","name":"Switch Lane","registration":"invite_only"}"#)?.status == 201)
        func patch(_ path: String, _ body: String, token: String = Self.token) async throws -> TestClient.Response {
            client.send("PATCH \(path) HTTP/1.1\r\nAuthorization: Bearer \(token)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            return try #require(await client.readResponse())
        }
        let opened = try await patch("/v1/admin/tenants/\(slug)", #"{"registration":"open","name":" Switch Lane North "}"#)
        #expect(opened.status == 200)
        #expect(opened.text.contains(#""registration":"open""#) && opened.text.contains(#""name":"Switch Lane North""#))
        #expect(try TenantStore().find(slug: slug, on: TestDatabase.migratedConnection())?.registration == .open)
        #expect(try await patch("/v1/admin/tenants/\(slug)", #"{"registration":"sometimes"}"#).status == 400)
        #expect(try await patch("/v1/admin/tenants/\(slug)", #"{"colour":"red"}"#).status == 400)
        #expect(try await patch("/v1/admin/tenants/no-such-\(slug)", #"{"name":"X"}"#).status == 404)
        #expect(try await patch("/v1/admin/tenants/'%3B--", #"{"name":"X"}"#).status == 404)
        #expect(try await patch("/v1/admin/tenants/\(slug)", #"{"name":"X"}"#, token: "wrong").status == 401)

        // Retention: set (every group is scheduled for a purge at once), refused out of range, cleared with null.
        let tenant = try #require(try TenantStore().find(slug: slug, on: TestDatabase.migratedConnection()))
        let group = try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant.id) { connection in
                let owner = try connection.query("INSERT INTO users (tenant_id, email, display_name) VALUES (\(tenant.id), 'ann@example.org', 'Ann') RETURNING id").rows[0]
                    .decode(UUID.self, "id")
                return try GroupStore().create(tenant: tenant.id, owner: owner, name: "Kept Close", description: "", on: connection).id
            }
        }
        let kept = try await patch("/v1/admin/tenants/\(slug)", #"{"retention_days":30}"#)
        #expect(kept.status == 200 && kept.text.contains(#""retention_days":30"#), "\(kept.text)")
        // Scheduled (due at once; a node of another suite may already have run it, RetentionTests sees it purge).
        let scheduled = try await pool.withConnection { connection in
            try connection.query("SELECT 1 FROM retention_jobs WHERE group_id = \(group)").first != nil
        }
        #expect(scheduled)
        #expect(try await patch("/v1/admin/tenants/\(slug)", #"{"retention_days":0}"#).status == 400)
        #expect(try await patch("/v1/admin/tenants/\(slug)", #"{"retention_days":"30"}"#).status == 400)
        let forever = try await patch("/v1/admin/tenants/\(slug)", #"{"retention_days":null}"#)
        #expect(forever.status == 200 && forever.text.contains(#""retention_days":null"#))
        #expect(try TenantStore().find(slug: slug, on: TestDatabase.migratedConnection())?.retentionDays == nil)
        await test.stop()
    }

    @Test func listsArePagedByCursor() async throws {
        let (test, pool) = try makeServer()
        defer { pool.close() }
        let client = try TestClient(port: test.port)
        let prefix = "page-\(UUID().uuidString.prefix(6).lowercased())"
        for index in 0..<3 { _ = await post(client, #"{"slug":"\#(prefix)-\#(index)","name":"Page \#(index)"}"#) }
        var seen: [String] = []
        var cursor: String? = "\(prefix)"
        while let after = cursor {
            client.send("GET /v1/admin/tenants?limit=1&cursor=\(after) HTTP/1.1\r\nAuthorization: Bearer \(Self.token)\r\n\r\n")
            let page = try #require(await client.readResponse())
            let object = try JSONSerialization.jsonObject(with: Data(page.body)) as? [String: Any]
            let items = object?["items"] as? [[String: Any]] ?? []
            guard let slug = items.first?["slug"] as? String, slug.hasPrefix(prefix) else { break }
            seen.append(slug)
            cursor = object?["next"] as? String
        }
        #expect(seen == ["\(prefix)-0", "\(prefix)-1", "\(prefix)-2"])
        await test.stop()
    }

    @Test(arguments: [
        (#"{"slug":"A","name":"x"}"#, 400, "slug"),
        (#"{"slug":"ok-slug","name":""}"#, 400, "name"),
        (#"{"slug":"ok-slug","name":"x","registration":"closed"}"#, 400, "registration"),
        (#"{"name":"x"}"#, 400, "slug"),
        (#"{"slug":7,"name":"x"}"#, 400, "slug"),
        (#"{"slug":"x'; DROP TABLE tenants; --","name":"x"}"#, 400, "slug"),
        ("{", 400, ""),
    ])
    func badBodiesAreRefusedNamingTheField(body: String, status: Int, field: String) async throws {
        let (test, pool) = try makeServer()
        defer { pool.close() }
        let client = try TestClient(port: test.port)
        let response = try #require(await post(client, body))
        #expect(response.status == status)
        #expect(response.text.hasPrefix(#"{"error":{"code":"#))
        if !field.isEmpty { #expect(response.text.contains(#""field":"\#(field)""#)) }
        await test.stop()
    }

    @Test func aNameFullOfSQLAndQuotesIsStoredAsWritten() async throws {
        let (test, pool) = try makeServer()
        defer { pool.close() }
        let client = try TestClient(port: test.port)
        let slug = "sql-\(UUID().uuidString.prefix(8).lowercased())"
        let name = #"Robert'); DROP TABLE tenants;-- \"Bobby\" ø"#
        let body = try String(decoding: JSONSerialization.data(withJSONObject: ["slug": slug, "name": name]), as: UTF8.self)
        #expect(await post(client, body)?.status == 201)
        let stored = try await pool.withConnection { try TenantStore().find(slug: slug, on: $0)?.name }
        #expect(stored == name)
        await test.stop()
    }

    @Test func withoutTheRightTokenTheOperatorAPIIsClosed() async throws {
        let (test, pool) = try makeServer()
        defer { pool.close() }
        let client = try TestClient(port: test.port)
        #expect(await post(client, #"{"slug":"nope","name":"x"}"#, token: nil)?.status == 401)
        #expect(await post(client, #"{"slug":"nope","name":"x"}"#, token: "wrong")?.status == 401)
        client.send("GET /v1/admin/tenants HTTP/1.1\r\nAuthorization: Basic \(Self.token)\r\n\r\n")
        #expect(await client.readResponse()?.status == 401)
        await test.stop()

        let (closed, closedPool) = try makeServer(adminToken: nil)
        defer { closedPool.close() }
        let other = try TestClient(port: closed.port)
        let off = await post(other, #"{"slug":"nope","name":"x"}"#)
        #expect(off?.status == 404 && String(decoding: off?.body ?? [], as: UTF8.self).contains("the operator API is off on this server: start it with ROOST_ADMIN_TOKEN"))
        await closed.stop()
    }
}
