import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol
import RoostServer
import RoostTestSupport
import Synchronization
import Testing

/// The password reset journey across processes: two `roost serve` nodes in webhook mode on a
/// database of the test's own, delivering to a sink the test runs. The code arrives at the
/// sink, is confirmed on the other node, the old session's streams on both nodes close with
/// 1008, and `password_changed` is delivered.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct PasswordResetNodesTests {
    /// Accepts every delivery and keeps its body.
    final class Sink: Sendable {
        final class Bodies: Sendable {
            let list = Mutex<[Data]>([])
        }
        let bodies = Bodies()
        let server: HTTPServer

        init() throws {
            var builder = Router.Builder()
            let bodies = self.bodies
            builder.add(.post, "/sink") { context in
                let body = Data(context.request.body)
                bodies.list.withLock { $0.append(body) }
                return HTTPResponse(status: .ok)
            }
            server = try HTTPServer(router: builder.build(), limits: NetworkLimits(), addresses: [.inet(host: "127.0.0.1", port: 0)],
                                    threads: 1, log: Log(level: .error), accessLog: false)
            try server.start()
        }

        var port: UInt16 { server.boundPorts[0] }

        /// The `data` of the first delivery of `template` to `address`, waiting up to 30 s for it.
        func awaitDelivery(_ template: String, to address: String) async throws -> [String: String] {
            var found: [String: Any]?
            try await Poll.until(within: .seconds(30)) {
                let delivered = bodies.list.withLock { $0 }.compactMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
                found = delivered.first(where: { $0["template"] as? String == template && $0["to"] as? String == address })?["data"] as? [String: Any]
                return found != nil
            }
            guard let found else { throw SubprocessError("no \(template) to \(address) reached the sink") }
            return found.compactMapValues { $0 as? String }
        }
    }

    @Test func aCodeFromOneNodeIsConfirmedOnTheOtherAndEveryOldStreamCloses() async throws {
        try await TestDatabase.withScratchDatabaseAsync { database in
            let url = TestDatabase.configuration(database: database).connectionString
            let connection = try TestDatabase.connect(database: database)
            try Migrator(migrations: Migration.load(from: TestDatabase.migrationsDirectory)).run(on: connection)
            _ = try TenantStore().create(slug: "reset-nodes", name: "Reset Nodes", registration: .open, on: connection)
            let sink = try Sink()
            let environment = ["ROOST_DELIVERY": "webhook", "ROOST_DELIVERY_WEBHOOK_URL": "http://127.0.0.1:\(sink.port)/sink"]
            let nodes = [try await ServeProcess(databaseURL: url, environment: environment), try await ServeProcess(databaseURL: url, environment: environment)]
            let (a, b) = (try APIClient(port: nodes[0].port), try APIClient(port: nodes[1].port))

            let (registered, account) = try await a.call("POST", "/v1/auth/register", ["tenant": "reset-nodes", "email": "ann@example.org",
                                                                                      "password": "a long enough password", "display_name": "Ann"])
            #expect(registered == 201, "\(account)")
            let old = try #require(account["token"] as? String)
            try connection.withTransaction { connection in
                try connection.setTenant(try TenantStore().find(slug: "reset-nodes", on: connection)!.id)
                try connection.query("UPDATE users SET email_verified = true WHERE email = 'ann@example.org'")
            }
            var streams: [WebSocketTestClient] = []
            for node in nodes {
                let stream = try await WebSocketTestClient.connect(port: node.port, path: "/v1/stream", token: old)
                #expect((await stream.receiveJSON())?["type"] as? String == "ready")
                streams.append(stream)
            }

            #expect(try await a.call("POST", "/v1/auth/password-reset", ["tenant": "reset-nodes", "email": "ann@example.org"]).0 == 202)
            let code = try #require(try await sink.awaitDelivery("password_reset", to: "ann@example.org")["code"])
            let (confirmed, session) = try await b.call("POST", "/v1/auth/password-reset/confirm",
                                                        ["tenant": "reset-nodes", "email": "ann@example.org", "code": code,
                                                         "new_password": "another long password"])
            #expect(confirmed == 200, "\(session)")
            let fresh = try #require(session["token"] as? String)
            for stream in streams { #expect(await stream.receiveClose() == .some(.policyViolation)) }
            for client in [a, b] {
                #expect(try await client.call("GET", "/v1/me", token: old).0 == 401)
                #expect(try await client.call("GET", "/v1/me", token: fresh).0 == 200)
            }
            _ = try await sink.awaitDelivery("password_changed", to: "ann@example.org")
            #expect(try await b.call("POST", "/v1/auth/password-reset/confirm",
                                     ["tenant": "reset-nodes", "email": "ann@example.org", "code": code, "new_password": "a third long password"]).0 == 410)
            for node in nodes {
                node.process.signal(SIGTERM)
                #expect(await node.process.wait() == 0)
            }
            await sink.server.shutdown()
        }
    }
}
