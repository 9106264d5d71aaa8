import Foundation
import RoostFanout
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// What reaches people outside the app is bounded (issue: hostile users): invitations, groups,
/// alerts and codes have limits that answer 429 with `Retry-After`; SMS go only where the
/// tenant allows; sessions end on time and all at once when asked.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct AbuseLimitTests {
    static func code(_ body: [String: Any]) -> String? { (body["error"] as? [String: Any])?["code"] as? String }

    /// A raw request, for the response headers.
    static func request(_ api: APIFixture, _ method: String, _ path: String, _ body: [String: Any], token: String) async throws -> TestClient.Response {
        let client = try TestClient(port: api.test.port)
        let data = try JSONSerialization.data(withJSONObject: body)
        client.send("\(method) \(path) HTTP/1.1\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(data.count)\r\n\r\n" + String(decoding: data, as: UTF8.self))
        return try #require(await client.readResponse())
    }

    @Test func invitationsAreLimitedPerSenderRecipientAndGroupAndOnlyTheOwnerMakesAdmins() async throws {
        var limits = AbuseLimits.generous
        limits.invitationsPerSenderPerDay = 3
        limits.invitationsPerRecipientPerDay = 1
        let api = try APIFixture(limits: limits)
        let owner = try await api.person(email: "olga@example.org")
        let admin = try await api.person(email: "abe@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Limits"], token: owner.token).1["id"] as? String)
        let other = try #require(try await api.call("POST", "/v1/groups", ["name": "Other"], token: owner.token).1["id"] as? String)
        try await api.addMember(admin.id, to: group, role: "admin")

        // An admin cannot make another admin, by invitation as by role change.
        let (forbidden, body) = try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "x@example.org", "role": "admin"], token: admin.token)
        #expect(forbidden == 403 && (body["error"] as? [String: Any])?["field"] as? String == "role")
        #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "x@example.org", "role": "admin"], token: owner.token).0 == 201)

        // One invitation per recipient a day, whichever group it comes from.
        let again = try await Self.request(api, "POST", "/v1/groups/\(other)/invitations", ["email": "x@example.org"], token: owner.token)
        #expect(again.status == 429 && Int(again.headers["retry-after"] ?? "").map { $0 > 0 && $0 <= 86_400 } == true)
        // Three a sender a day: two more to new addresses, then 429.
        #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "y@example.org"], token: owner.token).0 == 201)
        #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["phone": "+4511112222"], token: owner.token).0 == 201)
        let (status, refused) = try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": "z@example.org"], token: owner.token)
        #expect(status == 429 && Self.code(refused) == "rate_limited")
        // A refused invitation queued nothing.
        let queued = try await api.inTenant { _, connection in
            try connection.query("SELECT count(*) AS n FROM outbox WHERE template = 'invitation'").rows[0].decode(Int.self, "n")
        }
        #expect(queued == 3)
        await api.stop()
    }

    /// An address no test has used: the destination budget is counted across tenants (and so
    /// across the suites sharing the test database).
    static func freshAddress() -> String { "stranger-\(UUID().uuidString.prefix(12).lowercased())@example.org" }

    @Test func aFreshAccountMailsStrangersOnlyWithinItsBudget() async throws {
        var limits = AbuseLimits.generous
        limits.outsidePerNewAccountPerDay = 3
        limits.outsidePerAccountPerDay = 100
        let api = try APIFixture(limits: limits)
        let mallory = try await api.person(email: "mallory@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Spam"], token: mallory.token).1["id"] as? String)
        let before = OutsideBudget.refusalCount(.account)
        for _ in 0..<3 {
            #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": Self.freshAddress()], token: mallory.token).0 == 201)
        }
        let refused = try await Self.request(api, "POST", "/v1/groups/\(group)/invitations", ["email": Self.freshAddress()], token: mallory.token)
        let body = (try? JSONSerialization.jsonObject(with: Data(refused.body)) as? [String: Any]) ?? [:]
        #expect(refused.status == 429 && Int(refused.headers["retry-after"] ?? "").map { $0 > 0 } == true)
        #expect(Self.code(body) == "rate_limited" && (body["error"] as? [String: Any])?["field"] as? String == "account_budget", "\(body)")
        #expect(OutsideBudget.refusalCount(.account) > before)
        // A code to prove her own address is one more message of the same budget.
        let (verify, _) = try await api.call("POST", "/v1/me/contacts/verify", ["channel": "email"], token: mallory.token)
        #expect(verify == 429)
        let queued = try await api.inTenant { _, connection in
            try connection.query("SELECT count(*) AS n FROM outbox WHERE template IN ('invitation', 'verification')").rows[0].decode(Int.self, "n")
        }
        #expect(queued == 3)
        await api.stop()
    }

    @Test func oneNumberGetsItsDaysCodesWhicheverAccountsAskForIt() async throws {
        var limits = AbuseLimits.generous
        limits.outsidePerDestinationPerDay = 3
        let api = try APIFixture(limits: limits)
        // A premium number: every text to it costs the operator.
        let number = "+4570" + String(UInt32.random(in: 100_000...999_999))
        var statuses: [Int] = []
        var fields: [String] = []
        let before = OutsideBudget.refusalCount(.destination)
        for index in 0..<5 {
            let person = try await api.person(email: "caller\(index)@example.org")
            let (status, body) = try await api.call("PATCH", "/v1/me", ["phone": number, "current_password": APIFixture.password], token: person.token)
            statuses.append(status)
            if let field = (body["error"] as? [String: Any])?["field"] as? String { fields.append(field) }
        }
        #expect(statuses == [202, 202, 202, 429, 429] && fields == ["destination_budget", "destination_budget"], "\(statuses) \(fields)")
        #expect(OutsideBudget.refusalCount(.destination) >= before + 2)
        let texts = try await api.inTenant { _, connection in
            try connection.query("SELECT count(*) AS n FROM outbox WHERE recipient = \(number)").rows[0].decode(Int.self, "n")
        }
        #expect(texts == 3)
        await api.stop()
    }

    @Test func aTenantsDayOfMessagesEndsAndIsCounted() async throws {
        var limits = AbuseLimits.generous
        limits.outsidePerTenantPerDay = 2
        let api = try APIFixture(limits: limits)
        let owner = try await api.person(email: "olga@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Busy"], token: owner.token).1["id"] as? String)
        let before = OutsideBudget.refusalCount(.tenant)
        // Registration sent no message; two invitations use the tenant's day.
        for _ in 0..<2 {
            #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": Self.freshAddress()], token: owner.token).0 == 201)
        }
        let (status, body) = try await api.call("POST", "/v1/groups/\(group)/invitations", ["email": Self.freshAddress()], token: owner.token)
        #expect(status == 429 && (body["error"] as? [String: Any])?["field"] as? String == "tenant_budget", "\(body)")
        #expect(OutsideBudget.refusalCount(.tenant) == before + 1)
        #expect(OutsideBudget.renderMetrics().contains("roost_outside_messages_refused_total{budget=\"tenant\"}"))
        await api.stop()
    }

    @Test func aMemberWithoutADeviceGetsSixAlertEmailsAnHourHoweverManyAlerts() async throws {
        let api = try APIFixture()
        let ann = try await api.person(email: "ann@example.org")
        let bob = try await api.person(email: "bob@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Sirens"], token: ann.token).1["id"] as? String)
        try await api.addMember(bob.id, to: group, role: "member")
        try await api.inTenant { _, connection in try connection.query("UPDATE users SET email_verified = true") }
        for index in 0..<10 {
            let (posted, _) = try await api.call("POST", "/v1/groups/\(group)/messages",
                                                 ["client_msg_id": "siren-\(index)", "text": "Siren \(index)", "kind": "alert", "severity": "red"], token: ann.token)
            #expect(posted == 201)
        }
        let (emails, digests) = try await api.inTenant { _, connection in
            (try connection.query("SELECT count(*) AS n FROM outbox WHERE recipient = 'bob@example.org' AND template = 'alert'").rows[0].decode(Int.self, "n"),
             try connection.query("""
                SELECT o.data->>'count' AS count, o.data->>'lines' AS lines, j.next_attempt_at > now() + interval '50 minutes' AS later
                FROM outbox o JOIN outbox_jobs j ON j.outbox_id = o.id WHERE o.recipient = 'bob@example.org' AND o.template = 'alert_digest'
                """).rows.map { (try $0.decode(String.self, "count"), try $0.decode(String.self, "lines"), try $0.decode(Bool.self, "later")) })
        }
        #expect(emails == OutboxStore.alertFallbacksPerRecipientPerHour)
        // The other four are one "N more alerts" message, sent when the hour is up.
        #expect(digests.count == 1 && digests.first?.0 == "4" && digests.first?.2 == true, "\(digests)")
        #expect(digests.first?.1 == (6..<10).map { "Sirens: Siren \($0)" }.joined(separator: "\n"))
        await api.stop()
    }

    @Test func groupsAndAlertsAreLimitedPerMember() async throws {
        var limits = AbuseLimits.generous
        limits.groupsPerUserPerDay = 2
        limits.alertsPerUserPerHour = 2
        let api = try APIFixture(limits: limits)
        let person = try await api.person(email: "gil@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "One"], token: person.token).1["id"] as? String)
        #expect(try await api.call("POST", "/v1/groups", ["name": "Two"], token: person.token).0 == 201)
        let third = try await Self.request(api, "POST", "/v1/groups", ["name": "Three"], token: person.token)
        #expect(third.status == 429 && third.headers["retry-after"] != nil)

        for index in 0..<2 {
            #expect(try await api.call("POST", "/v1/groups/\(group)/messages", ["client_msg_id": "a\(index)", "text": "Alarm", "kind": "alert",
                                                                              "severity": "red"], token: person.token).0 == 201)
        }
        // A repeat of an alert already raised is not a new alert: it is answered, not counted.
        #expect(try await api.call("POST", "/v1/groups/\(group)/messages", ["client_msg_id": "a1", "text": "Alarm", "kind": "alert",
                                                                          "severity": "red"], token: person.token).0 == 200)
        let flood = try await Self.request(api, "POST", "/v1/groups/\(group)/messages",
                                           ["client_msg_id": "a9", "text": "Alarm", "kind": "alert", "severity": "amber"], token: person.token)
        #expect(flood.status == 429 && flood.headers["retry-after"] != nil)
        // Chat and info alerts reach nobody's phone: not limited.
        #expect(try await api.call("POST", "/v1/groups/\(group)/messages", ["client_msg_id": "c1", "text": "Hello", "kind": "chat"], token: person.token).0 == 201)
        #expect(try await api.call("POST", "/v1/groups/\(group)/messages", ["client_msg_id": "i1", "text": "FYI", "kind": "alert", "severity": "info"],
                                   token: person.token).0 == 201)
        // An info alert with a place is counted like an alert: each would tell distances from it.
        let located = try await Self.request(api, "POST", "/v1/groups/\(group)/messages",
                                             ["client_msg_id": "i2", "text": "Here?", "kind": "alert", "severity": "info",
                                              "location": ["lat": 55.0, "lon": 12.0]], token: person.token)
        #expect(located.status == 429 && located.headers["retry-after"] != nil)
        await api.stop()
    }

    @Test func smsGoOnlyToTheTenantsCountriesAndAResendBuysNoMoreGuesses() async throws {
        var limits = AbuseLimits.generous
        limits.verificationCodesPerUserPerDay = 2
        let api = try APIFixture(limits: limits)
        let slug = api.tenant
        #expect(try await api.pool.withConnection { try TenantStore().setSMSPrefixes(slug: slug, ["+45"], on: $0) })
        let owner = try await api.person(["email": "hal@example.org", "phone": "+4520304050", "display_name": "Hal"])
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Dk"], token: owner.token).1["id"] as? String)
        let (refused, body) = try await api.call("POST", "/v1/groups/\(group)/invitations", ["phone": "+8821234567"], token: owner.token)
        #expect(refused == 400 && (body["error"] as? [String: Any])?["field"] as? String == "phone")
        #expect(try await api.call("POST", "/v1/groups/\(group)/invitations", ["phone": "+4560708090"], token: owner.token).0 == 201)

        // Codes: wrong guesses survive a resend; at most two sends a day.
        #expect(try await api.call("POST", "/v1/me/contacts/verify", ["channel": "email"], token: owner.token).0 == 202)
        for _ in 0..<3 {
            #expect(try await api.call("POST", "/v1/me/contacts/confirm", ["channel": "email", "code": "000000"], token: owner.token).0 == 400)
        }
        try await api.inTenant { _, connection in
            try connection.query("UPDATE contact_verifications SET created_at = now() - interval '2 minutes'")  // past the resend wait
        }
        #expect(try await api.call("POST", "/v1/me/contacts/verify", ["channel": "email"], token: owner.token).0 == 202)
        let attempts = try await api.inTenant { _, connection in
            try connection.query("SELECT attempts FROM contact_verifications").rows[0].decode(Int.self, "attempts")
        }
        #expect(attempts == 3)
        try await api.inTenant { _, connection in
            try connection.query("UPDATE contact_verifications SET created_at = now() - interval '2 minutes'")
        }
        let third = try await Self.request(api, "POST", "/v1/me/contacts/verify", ["channel": "email"], token: owner.token)
        #expect(third.status == 429)
        try await api.pool.withConnection { _ = try TenantStore().setSMSPrefixes(slug: slug, nil, on: $0) }
        await api.stop()
    }

    @Test func sessionsEndAtTheirMaximumAgeAndLogoutAllClosesEveryStream() async throws {
        let api = try APIFixture(stream: true)
        let person = try await api.person(email: "ida@example.org")
        _ = try #require(try await api.call("POST", "/v1/groups", ["name": "Ida's"], token: person.token).1["id"] as? String)
        let second = try #require(try await api.call("POST", "/v1/auth/login", ["tenant": api.tenant, "email": "ida@example.org",
                                                                               "password": "a long enough password"]).1["token"] as? String)
        var streams: [WebSocketTestClient] = []
        for token in [person.token, second] {
            let stream = try await WebSocketTestClient.connect(port: api.test.port, path: "/v1/stream", token: token)
            #expect(await stream.receiveJSON()?["type"] as? String == "ready")
            streams.append(stream)
        }
        #expect(try await api.call("POST", "/v1/auth/logout-all", token: person.token).0 == 204)
        for stream in streams { #expect(await stream.receiveClose() == .some(.policyViolation)) }
        #expect(try await api.call("GET", "/v1/me", token: second).0 == 401)

        // A session past its maximum age no longer slides, and the sweep closes its stream.
        let fresh = try #require(try await api.call("POST", "/v1/auth/login", ["tenant": api.tenant, "email": "ida@example.org",
                                                                              "password": "a long enough password"]).1["token"] as? String)
        let stream = try await WebSocketTestClient.connect(port: api.test.port, path: "/v1/stream", token: fresh)
        #expect(await stream.receiveJSON()?["type"] as? String == "ready")
        try await api.inTenant { _, connection in
            // Signed in 91 days ago, last used a minute ago: the sliding expiry alone would keep it.
            try connection.query("""
                UPDATE sessions SET created_at = now() - interval '91 days', last_used_at = now() - interval '2 minutes',
                                    expires_at = now() + interval '10 days'
                """)
        }
        #expect(try await api.call("GET", "/v1/me", token: fresh).0 == 200)  // still within expires_at: its use caps it
        // Capped at sign-in plus 90 days, so already over (or already swept by another node's
        // scheduler, the end-to-end tests' nodes sharing the database: no row is as good).
        let expiry = try await api.inTenant { _, connection in
            try connection.query("SELECT expires_at <= now() AS capped FROM sessions").first?.decode(Bool.self, "capped") ?? true
        }
        #expect(expiry)
        #expect(try await api.call("GET", "/v1/me", token: fresh).0 == 401)
        // The tenant's sweep falls due, as that sign-in 91 days ago would have left it (set only
        // now: a sweep before the cap above would have found nothing expired and moved it on).
        // The end-to-end tests' nodes share the database and may sweep it first: either way it ends.
        try await api.inTenant { tenant, connection in
            try connection.query("UPDATE session_sweeps SET due_at = now() - interval '1 day' WHERE tenant_id = \(tenant)")
        }
        _ = try await DeadlineScheduler.endExpiredSessions(pool: api.pool)
        #expect(await stream.receiveClose() == .some(.policyViolation))
        await api.stop()
    }

    @Test func aStolenSessionCannotGuessThePasswordThroughAccountDeletion() async throws {
        let api = try APIFixture()
        let person = try await api.person(email: "jo@example.org")
        for index in 0..<Credentials.failuresPerIdentifier {
            #expect(try await api.call("DELETE", "/v1/me", ["current_password": "guess number \(index)"], token: person.token).0 == 403)
        }
        // The account's failures are used up: even the right password waits, and so does sign-in.
        let (status, body) = try await api.call("DELETE", "/v1/me", ["password": "a long enough password"], token: person.token)
        #expect(status == 429 && Self.code(body) == "rate_limited")
        #expect(try await api.call("POST", "/v1/auth/login", ["tenant": api.tenant, "email": "jo@example.org",
                                                               "password": "a long enough password"]).0 == 429)
        #expect(try await api.call("GET", "/v1/me", token: person.token).0 == 200)  // nothing was erased
        await api.stop()
    }
}
