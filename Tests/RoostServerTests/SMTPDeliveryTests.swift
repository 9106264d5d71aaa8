import Foundation
import RoostPersistence
import RoostProtocol
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Testing

/// Email over SMTP against a real SMTP server (aiosmtpd, scripts/lib/smtp_server.py) with
/// STARTTLS on a test CA and AUTH PLAIN: what arrives is read back by Python's `email` package.
@Suite(.enabled(if: TestDatabase.isConfigured && SpecTool.python != nil, "needs TEST_DATABASE_URL and ROOST_TEST_PYTHON (scripts/test sets both)"),
       .serialized)
struct SMTPDeliveryTests {
    /// The SMTP server, its ports and CA, and a scratch database whose outbox only this test's worker reads.
    final class Setup: @unchecked Sendable {
        let service: ScriptService
        let port: Int
        let wrongNamePort: Int
        let ca: String
        let database: String
        let api: APIFixture

        init() async throws {
            service = try await ScriptService("smtp_server.py", readyKey: "wrong_name_port")
            port = try #require(service.ready["port"] as? Int)
            wrongNamePort = try #require(service.ready["wrong_name_port"] as? Int)
            ca = try #require(service.ready["ca"] as? String)
            database = try TestDatabase.makeScratch()
            api = try APIFixture(database: database)
        }

        func channels(port: Int? = nil, url: String? = nil) throws -> OutboxWorker.Channels {
            var channels = OutboxWorker.Channels()
            channels.email = .smtp
            channels.smtp = try SMTPSettings(url: url ?? "smtp://roost:s3cret@localhost:\(port ?? self.port)", from: "Roost Nabohjælp <noreply@roost.example>")
            channels.tls = try TLSClientContext(extraCAFile: ca)
            channels.messages = RenderedMessages(publicURL: "https://watch.example.org")
            return channels
        }

        func worker(_ channels: OutboxWorker.Channels, maxAttempts: Int = 6) -> OutboxWorker {
            var options = OutboxWorker.Options()
            options.baseBackoffSeconds = 0.001
            options.maxAttempts = maxAttempts
            options.webhookTimeoutSeconds = 10
            return OutboxWorker(pool: api.pool, channels: channels, options: options, log: Log(level: .error))
        }

        func finish() async {
            await api.stop()
            await service.stop()
            TestDatabase.dropScratch(database)
        }

        /// Sends an invitation to `address` from a new member of a new group; the outbox row's id.
        func invite(_ address: String, inviter: String = "Søren") async throws -> UUID {
            let owner = try await api.person(["email": "owner-\(UUID().uuidString.prefix(6))@example.org", "display_name": inviter])
            let (_, group) = try await api.call("POST", "/v1/groups", ["name": "Æblevej Nord"], token: owner.token)
            let gid = try #require(group["id"] as? String)
            let (status, body) = try await api.call("POST", "/v1/groups/\(gid)/invitations", ["email": address], token: owner.token)
            #expect(status == 201, "\(body)")
            return try await api.inTenant { _, connection in
                try connection.query("SELECT id FROM outbox WHERE recipient = \(address) AND template = 'invitation'").rows[0].decode(UUID.self, "id")
            }
        }

        /// Moves a retried delivery's next attempt to now, as time would (its backoff is not waited out).
        func makeDue(_ id: UUID) async throws {
            try await api.pool.withConnection { try $0.query("UPDATE outbox_jobs SET next_attempt_at = now() WHERE outbox_id = \(id)") }
        }

        func row(_ id: UUID) async throws -> (status: String, attempts: Int, error: String?) {
            try await api.inTenant { _, connection in
                let row = try connection.query("SELECT status, attempts, last_error FROM outbox WHERE id = \(id)").rows[0]
                return (try row.decode(String.self, "status"), try row.decode(Int.self, "attempts"), try row.decode(String?.self, "last_error"))
            }
        }

        func read(_ file: String) async throws -> [String: Any] {
            let outcome = try await Subprocess.run(SpecTool.python!, [SpecTool.root.appendingPathComponent("scripts/lib/smtp_server.py").path, "read", file])
            guard outcome.status == 0 else { throw SubprocessError("smtp_server.py read: \(outcome.output)") }
            return try #require(try JSONSerialization.jsonObject(with: Data(outcome.output.utf8)) as? [String: Any])
        }

        /// The server's line for the message to `address`.
        func received(_ address: String) async throws -> [String: Any] {
            let line = try #require(await service.process.waitForLine(containing: "\"\(address)\"", timeout: .seconds(20)), "nothing reached \(address)")
            return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    @Test func anInvitationArrivesOverSTARTTLSAsMultipartWithAUTF8Subject() async throws {
        let setup = try await Setup()
        let tenant = setup.api.tenant
        try await setup.api.pool.withConnection { _ = try TenantStore().update(slug: tenant, name: nil, registration: nil, locale: "da", on: $0) }
        let id = try await setup.invite("nabo@example.org")
        #expect(try await setup.worker(try setup.channels()).runOnce() >= 1)
        #expect(try await setup.row(id).status == "delivered")
        let arrival = try await setup.received("nabo@example.org")
        #expect(arrival["tls"] as? Bool == true && arrival["authenticated"] as? Bool == true && arrival["from"] as? String == "noreply@roost.example")
        let mail = try await setup.read(try #require(arrival["file"] as? String))
        #expect(mail["multipart"] as? Bool == true && mail["content_type"] as? String == "multipart/alternative")
        #expect(mail["subject"] as? String == "Søren inviterer dig til Æblevej Nord på Roost")
        #expect(mail["from"] as? String == "Roost Nabohjælp <noreply@roost.example>")
        #expect(mail["to"] as? String == "nabo@example.org")
        #expect(mail["date"] as? Bool == true)
        #expect((mail["message_id"] as? String)?.hasSuffix("@roost.example>") == true)
        #expect(mail["defects"] as? [String] == [])
        let text = try #require(mail["text"] as? String)
        let html = try #require(mail["html"] as? String)
        #expect(text.contains("Oak Lane") && text.contains("https://watch.example.org/#/invitation?token=riv_"))
        #expect(html.contains("<strong>Æblevej Nord</strong>") && html.contains("href=\"https://watch.example.org/#/invitation?token=riv_"))
        // Delivered: the token is gone from the row.
        let data = try await setup.api.inTenant { _, connection in
            try connection.query("SELECT data::text AS data FROM outbox WHERE id = \(id)").rows[0].decode(String.self, "data")
        }
        #expect(!data.contains("\"token\""))
        await setup.finish()
    }

    @Test func a4xxIsRetriedAndA5xxFailsAtOnceWithTheServersWords() async throws {
        let setup = try await Setup()
        let worker = setup.worker(try setup.channels())
        let busy = try await setup.invite("tempfail@example.org")
        try await worker.runOnce()
        let first = try await setup.row(busy)
        #expect(first.status == "pending" && first.attempts == 1)
        #expect(first.error?.contains("451 4.3.0 Mailbox busy, try again later") == true, "\(first)")
        // Once its backoff is over, the next round takes it again and it goes through.
        try await setup.makeDue(busy)
        try await worker.runOnce()
        #expect(try await setup.row(busy).status == "delivered")
        _ = try await setup.received("tempfail@example.org")

        let refused = try await setup.invite("reject@example.org")
        try await worker.runOnce()
        let failed = try await setup.row(refused)
        #expect(failed.status == "failed" && failed.attempts == 1, "a 5xx is not tried again: \(failed)")
        #expect(failed.error?.contains("550 5.1.1 No such mailbox here") == true, "\(failed)")
        // And `roost outbox list --failed` shows the words.
        let listed = try await setup.api.inTenant { _, connection in try OutboxStore().failed(limit: 10, on: connection) }
        #expect(listed.contains { $0.id == refused && $0.lastError?.contains("550 5.1.1") == true })
        await setup.finish()
    }

    @Test func aHundredEmailsGoOverAFewKeptSessionsAndARefusalLeavesTheSessionUsable() async throws {
        let setup = try await Setup()
        // A hundred codes, one personal email each, and among them one the relay refuses for good.
        let recipients = (0..<100).map { $0 == 37 ? "reject-\($0)@example.org" : "neighbour-\($0)@example.org" }
        try await setup.api.inTenant { tenant, connection in
            for (index, recipient) in recipients.enumerated() {
                try OutboxStore().enqueue(tenant: tenant, channel: .email, recipient: recipient, template: .verification,
                                          data: RawJSON(#"{"code":"\#(100_000 + index)","expires_in_s":600}"#), on: connection)
            }
        }
        var options = OutboxWorker.Options()
        options.sessionsPerRelay = 2
        let worker = OutboxWorker(pool: setup.api.pool, channels: try setup.channels(), options: options, log: Log(level: .error))
        #expect(try await worker.runOnce() == 100)

        let arrivals = setup.service.lines.filter { $0["session"] != nil }
        #expect(arrivals.count == 99, "every email but the refused one")
        #expect(Set(arrivals.compactMap { ($0["to"] as? [String])?.first }) == Set(recipients.filter { !$0.hasPrefix("reject") }),
                "one message per recipient, never a list")
        #expect(arrivals.allSatisfy { ($0["to"] as? [String])?.count == 1 && $0["tls"] as? Bool == true })
        let sessions = Set(arrivals.compactMap { $0["session"] as? String })
        #expect(sessions.count <= 2, "99 emails over \(sessions.count) sessions")
        let statuses = try await setup.api.inTenant { _, connection in
            try connection.query("SELECT status, count(*) AS n FROM outbox WHERE channel = 'email' GROUP BY status ORDER BY status").rows
                .map { "\(try $0.decode(String.self, "status")) \(try $0.decode(Int.self, "n"))" }
        }
        #expect(statuses == ["delivered 99", "failed 1"])
        await setup.finish()
    }

    @Test func aCertificateForAnotherNameIsRefusedAndNothingIsSent() async throws {
        let setup = try await Setup()
        let id = try await setup.invite("someone@example.org")
        try await setup.worker(try setup.channels(port: setup.wrongNamePort)).runOnce()
        let row = try await setup.row(id)
        #expect(row.status == "pending" && row.attempts == 1)
        #expect(row.error?.contains("certificate") == true && row.error?.contains("localhost") == true, "\(row)")
        #expect(!setup.service.process.output.contains("someone@example.org"))
        // Without the test CA, the right name is refused too: the system store does not know it.
        var untrusted = try setup.channels()
        untrusted.tls = try TLSClientContext()
        try await setup.makeDue(id)
        try await setup.worker(untrusted).runOnce()
        #expect(try await setup.row(id).error?.contains("certificate") == true)
        #expect(!setup.service.process.output.contains("someone@example.org"))
        await setup.finish()
    }

    @Test func smtpsSpeaksTLSFromTheFirstByte() async throws {
        let setup = try await Setup()
        let port = try #require(setup.service.ready["implicit_tls_port"] as? Int)
        let id = try await setup.invite("tls@example.org")
        try await setup.worker(try setup.channels(url: "smtps://roost:s3cret@localhost:\(port)")).runOnce()
        #expect(try await setup.row(id).status == "delivered")
        // That port speaks nothing but TLS (aiosmtpd's session.ssl describes STARTTLS only).
        #expect(try await setup.received("tls@example.org")["authenticated"] as? Bool == true)
        await setup.finish()
    }

    @Test func smtpSettingsAreCheckedBeforeServing() throws {
        #expect(throws: ConfigurationError.self) { try SMTPSettings(url: "http://mail.example.org", from: "a@example.org") }
        #expect(throws: ConfigurationError.self) { try SMTPSettings(url: "smtp://mail.example.org", from: nil) }
        #expect(throws: ConfigurationError.self) { try SMTPSettings(url: "smtp://mail.example.org", from: "not an address") }
        let settings = try SMTPSettings(url: "smtps://me%40example.org:p%3Ass@mail.example.org", from: "Roost <noreply@example.org>")
        #expect(settings.security == .implicitTLS && settings.port == 465 && settings.username == "me@example.org" && settings.password == "p:ss")
        #expect(try SMTPSettings(url: "smtp://mail.example.org", from: "a@example.org").port == 587)
        #expect(try SMTPSettings(url: "smtp+plain://127.0.0.1", from: "a@example.org").security == .plain)
    }
}
