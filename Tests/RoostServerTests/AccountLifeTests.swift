import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
import RoostTestSupport
@testable import RoostServer
import Testing

/// Accounts over their life (API.md "Accounts") over the real API, database and stream: a
/// forgotten password reset with a single-use code, a password changed, the sessions a user
/// sees and ends, and tenant discovery.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct AccountLifeTests {
    func login(_ api: APIFixture, _ email: String, password: String = APIFixture.password) async throws -> (Int, [String: Any]) {
        try await api.call("POST", "/v1/auth/login", ["tenant": api.tenant, "email": email, "password": password])
    }

    /// Rounds of reset requests over the fixture's tenant (what the scheduler does twice a second)
    /// until none is left: a node of another suite sharing the database may hold some a moment.
    func sendCodes(_ api: APIFixture) async throws {
        let tenant = try await api.inTenant { tenant, _ in tenant }
        let jobs = PasswordResetJobs(pool: api.pool, runner: JobRunner(metrics: JobMetrics(), log: Log(level: .error)))
        let done = try await Poll.until {
            try await jobs.runOnce(tenant: tenant)
            return try await api.pool.query("SELECT count(*) AS n FROM password_reset_jobs WHERE tenant_id = \(tenant)").rows[0].decode(Int.self, "n") == 0
        }
        #expect(done, "reset requests still waiting")
    }

    /// The reset code last queued to `address` (nil when none was), once the requests are handled.
    func code(_ api: APIFixture, to address: String) async throws -> String? {
        try await sendCodes(api)
        return try await api.inTenant { _, connection in
            try connection.query("""
                SELECT data->>'code' AS code FROM outbox WHERE recipient = \(address) AND template = 'password_reset' ORDER BY created_at DESC LIMIT 1
                """).first?.decode(String.self, "code")
        }
    }

    func templates(_ api: APIFixture, to address: String) async throws -> [String] {
        try await api.inTenant { _, connection in
            try connection.query("SELECT template FROM outbox WHERE recipient = \(address) ORDER BY created_at, id").rows.map { try $0.decode(String.self, "template") }
        }
    }

    func reset(_ api: APIFixture, _ email: String) async throws -> (Int, [String: Any]) {
        try await api.call("POST", "/v1/auth/password-reset", ["tenant": api.tenant, "email": email])
    }

    func confirm(_ api: APIFixture, _ email: String, _ code: String, _ password: String = "a brand new password") async throws -> (Int, [String: Any]) {
        try await api.call("POST", "/v1/auth/password-reset/confirm", ["tenant": api.tenant, "email": email, "code": code, "new_password": password])
    }

    @Test func aForgottenPasswordIsResetWithASingleUseCodeAndEverySessionEnds() async throws {
        let api = try APIFixture(stream: true)
        let ann = try await api.person(email: "ann@example.org")
        try await api.inTenant { _, connection in try connection.query("UPDATE users SET email_verified = true WHERE email = 'ann@example.org'") }
        let phone = try #require(try await login(api, "ann@example.org").1["token"] as? String)
        let stream = try await StreamTests().stream(api, APIFixture.Person(token: phone, id: ann.id)).0

        // Known and unknown addresses get the same answer; only the known one gets a code.
        let (known, knownBody) = try await reset(api, "ann@example.org")
        let (unknown, unknownBody) = try await reset(api, "nobody@example.org")
        #expect(known == 202 && unknown == 202)
        #expect(NSDictionary(dictionary: knownBody).isEqual(to: unknownBody))
        #expect(try await code(api, to: "nobody@example.org") == nil)
        let first = try #require(try await code(api, to: "ann@example.org"))
        #expect(first.count == 8)
        // A newer request voids the older code.
        _ = try await reset(api, "ann@example.org")
        let second = try #require(try await code(api, to: "ann@example.org"))
        #expect(first != second)
        let (wrong, wrongBody) = try await confirm(api, "ann@example.org", first)
        #expect(wrong == 400 && (wrongBody["error"] as? [String: Any])?["field"] as? String == "code", "\(wrongBody)")
        #expect(try await confirm(api, "nobody@example.org", second).0 == 400, "an unknown account answers like a wrong code")
        #expect(try await confirm(api, "ann@example.org", second, "short").0 == 400)

        let (done, session) = try await confirm(api, "ann@example.org", second)
        #expect(done == 200 && (session["user"] as? [String: Any])?["id"] as? String == ann.id, "\(session)")
        let fresh = try #require(session["token"] as? String)
        // Every earlier session ends, its stream closed with 1008; the new one works.
        #expect(await stream.receiveClose() == .some(.policyViolation))
        for token in [ann.token, phone] { #expect(try await api.call("GET", "/v1/me", token: token).0 == 401) }
        #expect(try await api.call("GET", "/v1/me", token: fresh).0 == 200)
        #expect(try await login(api, "ann@example.org").0 == 401)
        #expect(try await login(api, "ann@example.org", password: "a brand new password").0 == 200)
        #expect(try await templates(api, to: "ann@example.org").suffix(1) == ["password_changed"])
        // Single use.
        #expect(try await confirm(api, "ann@example.org", second).0 == 410)

        // Expired after an hour; five wrong tries use a code up.
        _ = try await reset(api, "ann@example.org")
        let third = try #require(try await code(api, to: "ann@example.org"))
        try await api.inTenant { _, connection in try connection.query("UPDATE password_resets SET expires_at = now() - interval '1 second'") }
        #expect(try await confirm(api, "ann@example.org", third).0 == 410)
        await api.stop()
    }

    /// The answer for an address nobody has is the known one's: the same status and body, and a
    /// time within the spread of known accounts' (50 of each, interleaved; figures printed).
    @Test func anUnknownAddressIsAnsweredLikeAKnownOneInTimeToo() async throws {
        let api = try APIFixture()
        let count = 50
        for index in 0..<count { _ = try await api.person(email: "known\(index)@example.org") }
        var known: [Double] = [], unknown: [Double] = []
        for index in 0..<count {
            for (address, isKnown) in [("known\(index)@example.org", true), ("unknown\(index)@example.org", false)] {
                let started = ContinuousClock.now
                let (status, body) = try await reset(api, address)
                let elapsed = ContinuousClock.now - started
                #expect(status == 202 && body["status"] as? String == "sent if the account exists")
                let ms = Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000
                if isKnown { known.append(ms) } else { unknown.append(ms) }
            }
        }
        try await sendCodes(api)
        let codes = try await api.inTenant { _, connection in
            try connection.query("SELECT count(*) AS n FROM outbox WHERE template = 'password_reset'").rows[0].decode(Int.self, "n")
        }
        #expect(codes == count, "a code for each known address, none for the others")
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let (low, high) = (known.sorted()[count / 10], known.sorted()[count - 1 - count / 10])
        print(String(format: "password reset timing: known p10 %.2f ms, median %.2f ms, p90 %.2f ms; unknown median %.2f ms",
                     low, median(known), high, median(unknown)))
        #expect(median(unknown) >= low && median(unknown) <= high, "unknown median \(median(unknown)) ms outside known p10–p90 \(low)–\(high) ms")
        await api.stop()
    }

    @Test func wrongCodesUseACodeUpAndRequestsAreThrottledAlikeForEveryAddress() async throws {
        let api = try APIFixture()
        _ = try await api.person(email: "bo@example.org")
        _ = try await reset(api, "bo@example.org")
        let code = try #require(try await code(api, to: "bo@example.org"))
        let wrongCode = code == "00000000" ? "11111111" : "00000000"
        for _ in 0..<5 { #expect(try await confirm(api, "bo@example.org", wrongCode).0 == 400) }
        #expect(try await confirm(api, "bo@example.org", code).0 == 410, "five wrong tries used it up")
        // A new request does not buy more guesses on a used-up code's account: it starts afresh, once.
        for address in ["bo@example.org", "ghost@example.org"] {
            // bo has had one request this hour, the ghost none: three each are answered, then 429.
            var statuses: [Int] = []
            for _ in 0..<4 { statuses.append(try await reset(api, address).0) }
            #expect(statuses == (address == "ghost@example.org" ? [202, 202, 202, 429] : [202, 202, 429, 429]), "\(address): \(statuses)")
        }
        for (body, field) in [(["tenant": api.tenant, "email": "bo@example.org", "phone": "+4520000000"], "phone"),
                              (["tenant": api.tenant], "email"), (["tenant": api.tenant, "email": "not an address"], "email"),
                              (["tenant": api.tenant, "email": "bo@example.org", "extra": 1], "extra")] as [([String: Any], String)] {
            let (status, error) = try await api.call("POST", "/v1/auth/password-reset", body)
            #expect(status == 400 && (error["error"] as? [String: Any])?["field"] as? String == field, "\(body) → \(status) \(error)")
        }
        #expect(try await api.call("POST", "/v1/auth/password-reset", ["tenant": "no-such-street", "email": "bo@example.org"]).0 == 404)
        #expect(try await confirm(api, "bo@example.org", "1234").0 == 400)
        await api.stop()
    }

    @Test func aChangedPasswordKeepsThisSessionAndEndsTheOthers() async throws {
        let api = try APIFixture()
        let cy = try await api.person(email: "cy@example.org")
        let other = try #require(try await login(api, "cy@example.org").1["token"] as? String)
        let (wrong, error) = try await api.call("POST", "/v1/me/password", ["current_password": "not it at all", "new_password": "another long one"],
                                                token: cy.token)
        #expect(wrong == 400 && (error["error"] as? [String: Any])?["field"] as? String == "current_password")
        #expect(try await api.call("POST", "/v1/me/password", ["current_password": APIFixture.password, "new_password": "short"], token: cy.token).0 == 400)
        let (changed, user) = try await api.call("POST", "/v1/me/password", ["current_password": APIFixture.password, "new_password": "another long one"],
                                                 token: cy.token)
        #expect(changed == 200 && user["id"] as? String == cy.id)
        #expect(try await api.call("GET", "/v1/me", token: cy.token).0 == 200)
        #expect(try await api.call("GET", "/v1/me", token: other).0 == 401)
        #expect(try await login(api, "cy@example.org", password: "another long one").0 == 200)
        #expect(try await templates(api, to: "cy@example.org").contains("password_changed") == false, "an unverified address is not written to")
        await api.stop()
    }

    @Test func sessionsAreListedWithTheirClientAndNetworkAndEndedOneByOne() async throws {
        let api = try APIFixture()
        let dee = try await api.person(email: "dee@example.org")
        let eve = try await api.person(email: "eve@example.org")
        // Dee signs in again from "her phone".
        let client = try TestClient(port: api.test.port, receiveTimeoutSeconds: 60)
        let body = try JSONSerialization.data(withJSONObject: ["tenant": api.tenant, "email": "dee@example.org", "password": APIFixture.password])
        client.send("POST /v1/auth/login HTTP/1.1\r\nUser-Agent: RoostPhone/2.1 (Android 14)\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(body.count)\r\n\r\n" + String(decoding: body, as: UTF8.self))
        let signedIn = try #require(await client.readResponse())
        let phone = try #require((try JSONSerialization.jsonObject(with: Data(signedIn.body)) as? [String: Any])?["token"] as? String)

        let (status, listed) = try await api.call("GET", "/v1/me/sessions", token: dee.token)
        let items = try #require(listed["items"] as? [[String: Any]])
        #expect(status == 200 && items.count == 2, "\(listed)")
        let mine = try #require(items.first { $0["current"] as? Bool == true })
        let theirs = try #require(items.first { $0["current"] as? Bool == false })
        #expect(theirs["client"] as? String == "RoostPhone/2.1 (Android 14)" && theirs["address"] as? String == "127.0.0.0/24", "\(theirs)")
        #expect(mine["created_at"] is String && mine["last_used_at"] is String && mine["expires_at"] is String)
        #expect(String(decoding: try JSONSerialization.data(withJSONObject: listed), as: UTF8.self).contains(dee.token) == false)

        // Eve cannot end Dee's session; Dee can, and it stops at once.
        let id = try #require(theirs["id"] as? String)
        #expect(try await api.call("DELETE", "/v1/me/sessions/\(id)", token: eve.token).0 == 404)
        #expect(try await api.call("GET", "/v1/me", token: phone).0 == 200)
        #expect(try await api.call("DELETE", "/v1/me/sessions/\(id)", token: dee.token).0 == 204)
        #expect(try await api.call("GET", "/v1/me", token: phone).0 == 401)
        #expect(try await api.call("DELETE", "/v1/me/sessions/\(id)", token: dee.token).0 == 404)
        #expect(try await api.call("DELETE", "/v1/me/sessions/not-an-id", token: dee.token).0 == 404)
        await api.stop()
    }

    /// The 6-digit code last sent to `address` for proving it.
    func verification(_ api: APIFixture, to address: String) async throws -> String? {
        try await api.inTenant { _, connection in
            try connection.query("""
                SELECT data->>'code' AS code FROM outbox WHERE recipient = \(address) AND template = 'verification' ORDER BY created_at DESC LIMIT 1
                """).first?.decode(String.self, "code")
        }
    }

    @Test func anAddressChangesOnlyOnceTheNewOneIsProvedAndATakenOneIsRefused() async throws {
        let api = try APIFixture()
        let ann = try await api.person(email: "ann@example.org")
        _ = try await api.person(email: "ben@example.org")
        let (status, me) = try await api.call("PATCH", "/v1/me", ["email": "Ann.New@Example.org", "current_password": APIFixture.password], token: ann.token)
        #expect(status == 202 && me["email"] as? String == "ann@example.org", "still the old address until proved: \(me)")
        #expect(try await templates(api, to: "ann@example.org") == ["address_change_requested"])
        let notice = try await api.inTenant { _, connection in
            try connection.query("SELECT data->>'new_address' AS a FROM outbox WHERE recipient = 'ann@example.org'").rows[0].decode(String.self, "a")
        }
        #expect(notice == "a•••@example.org")
        let code = try #require(try await verification(api, to: "ann.new@example.org"))
        #expect(try await api.call("POST", "/v1/me/contacts/confirm", ["channel": "email", "code": code == "000000" ? "111111" : "000000"],
                                   token: ann.token).0 == 400)
        let (confirmed, user) = try await api.call("POST", "/v1/me/contacts/confirm", ["channel": "email", "code": code], token: ann.token)
        #expect(confirmed == 200 && user["email"] as? String == "ann.new@example.org" && user["email_verified"] as? Bool == true, "\(user)")
        #expect(try await login(api, "ann.new@example.org").0 == 200)
        #expect(try await login(api, "ann@example.org").0 == 401)
        // Someone else's address now: 409 at once. Bad addresses: 400 naming the field.
        #expect(try await api.call("PATCH", "/v1/me", ["phone": "+4520000099", "current_password": APIFixture.password], token: ann.token).0 == 202)
        let (taken, error) = try await api.call("PATCH", "/v1/me", ["email": "ben@example.org", "current_password": APIFixture.password], token: ann.token)
        #expect(taken == 409 && (error["error"] as? [String: Any])?["field"] as? String == "email", "\(error)")
        for (body, field) in [(["email": "not an address"], "email"), (["phone": "12"], "phone")] {
            let (bad, answer) = try await api.call("PATCH", "/v1/me", body.merging(["current_password": APIFixture.password]) { $1 }, token: ann.token)
            #expect(bad == 400 && (answer["error"] as? [String: Any])?["field"] as? String == field, "\(body) → \(bad) \(answer)")
        }
        await api.stop()
    }

    @Test func aStolenSessionCannotMoveTheAccountAndTheOldAddressUndoesAChange() async throws {
        let api = try APIFixture(stream: true)
        let ann = try await api.person(email: "ann@example.org")
        try await api.inTenant { _, connection in try connection.query("UPDATE users SET email_verified = true") }
        // The thief has Ann's session but not her password.
        for (body, code) in [([:], "password_required"), (["current_password": "a guess at it"], "wrong_password")] as [([String: String], String)] {
            for change in [["email": "thief@example.org"], ["phone": "+4520000066"]] {
                let (status, answer) = try await api.call("PATCH", "/v1/me", change.merging(body) { $1 }, token: ann.token)
                #expect(status == 403 && answer.errorCode == code, "\(change) \(body) → \(status) \(answer)")
            }
        }
        #expect(try await templates(api, to: "thief@example.org").isEmpty, "nothing was sent to the thief's address")
        // A name alone still needs no password.
        #expect(try await api.call("PATCH", "/v1/me", ["display_name": "Ann B"], token: ann.token).0 == 200)

        // With the password (a thief who has it too), the change goes through and the old
        // address is sent a link that undoes it.
        #expect(try await api.call("PATCH", "/v1/me", ["email": "thief@example.org", "current_password": APIFixture.password], token: ann.token).0 == 202)
        let code = try #require(try await verification(api, to: "thief@example.org"))
        #expect(try await api.call("POST", "/v1/me/contacts/confirm", ["channel": "email", "code": code], token: ann.token).0 == 200)
        let (thiefSession, _) = try await login(api, "thief@example.org")
        #expect(thiefSession == 200)
        let stream = try await WebSocketTestClient.connect(port: api.test.port, path: "/v1/stream", token: ann.token)
        #expect(await stream.receiveJSON()?["type"] as? String == "ready")
        #expect(try await templates(api, to: "ann@example.org") == ["address_change_requested", "address_changed"])
        let link = try await api.inTenant { _, connection in
            try connection.query("SELECT data->>'token' AS token, data->>'new_address' AS shown FROM outbox WHERE template = 'address_changed'").rows.map {
                (try $0.decode(String.self, "token"), try $0.decode(String.self, "shown"))
            }
        }
        let token = try #require(link.first?.0)
        #expect(token.hasPrefix("rcu_") && link.first?.1 == "t•••@example.org")

        // The undo needs no session: the old address is back, verified, and every session ends.
        #expect(try await api.call("POST", "/v1/me/contacts/undo", ["token": "rcu_" + String(token.dropFirst(4).reversed())]).0 == 404)
        let (undone, answer) = try await api.call("POST", "/v1/me/contacts/undo", ["token": token])
        #expect(undone == 200 && answer["status"] as? String == "undone", "\(answer)")
        #expect(try await api.call("GET", "/v1/me", token: ann.token).0 == 401)
        #expect(await stream.receiveClose() == .some(.policyViolation), "her streams close too")
        #expect(try await login(api, "thief@example.org").0 == 401)
        let (back, session) = try await login(api, "ann@example.org")
        #expect(back == 200)
        let (_, me) = try await api.call("GET", "/v1/me", token: try #require(session["token"] as? String))
        #expect(me["email"] as? String == "ann@example.org" && me["email_verified"] as? Bool == true, "\(me)")
        // Once only.
        #expect(try await api.call("POST", "/v1/me/contacts/undo", ["token": token]).0 == 404)
        await api.stop()
    }

    @Test func twoAccountsRacingForOneAddressLeaveExactlyOneWithIt() async throws {
        let api = try APIFixture()
        let cy = try await api.person(email: "cy@example.org")
        let dee = try await api.person(email: "dee@example.org")
        var codes: [String] = []
        for person in [cy, dee] {
            #expect(try await api.call("PATCH", "/v1/me", ["email": "shared@example.org", "current_password": APIFixture.password], token: person.token).0 == 202)
            let both = try await api.inTenant { _, connection in
                try connection.query("""
                    SELECT data->>'code' AS code FROM outbox WHERE recipient = 'shared@example.org' AND template = 'verification' ORDER BY created_at
                    """).rows.map { try $0.decode(String.self, "code") }
            }
            codes.append(try #require(both.last))
        }
        let port = api.test.port
        let pairs = Array(zip([cy.token, dee.token], codes))
        let statuses = try await withThrowingTaskGroup(of: Int.self) { tasks in
            for (token, code) in pairs {
                tasks.addTask {
                    try await APIClient(port: port).call("POST", "/v1/me/contacts/confirm", ["channel": "email", "code": code], token: token).0
                }
            }
            return try await tasks.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.sorted() == [200, 409], "\(statuses)")
        let holders = try await api.inTenant { _, connection in
            try connection.query("SELECT count(*) AS n FROM users WHERE email = 'shared@example.org'").rows[0].decode(Int.self, "n")
        }
        #expect(holders == 1)
        await api.stop()
    }

    /// The export holds the account's own data and nothing else: its messages (not others', not
    /// one hidden from it), answers, check-ins, devices with their tokens masked, sessions,
    /// contacts; 5 an hour.
    @Test func theExportIsTheAccountsOwnDataAsOneDocument() async throws {
        let walk = try await CheckinPhaseTests.Walk()
        let api = walk.api
        #expect(try await api.call("PUT", "/v1/me/pins", ["safe_pin": "2468", "duress_pin": "1357"], token: walk.ben.token).0 == 204)
        _ = try await StreamTests().post(api, walk.elm, "Ben's own words", as: walk.ben)
        let (_, photo) = try await MediaTests.upload(api, MediaSamples.png(), token: walk.ben.token)
        _ = try await StreamTests().post(api, walk.elm, "Cy's words", as: walk.cy)
        let alert = try await StreamTests().post(api, walk.elm, "Smoke", as: walk.cy, kind: "alert")
        #expect(try await api.call("POST", "/v1/groups/\(walk.elm)/alerts/\(alert)/ack", ["response": "seen"], token: walk.ben.token).0 == 200)
        _ = try await api.call("POST", "/v1/me/emergency-contacts", ["name": "Mum", "email": "mum@example.org"], token: walk.ben.token)
        let checkin = try #require(try await walk.start(["group_id": walk.elm, "due_in_s": 600])["id"] as? String)
        // A duress answer: the silent alert is Ben's message, hidden from Ben, so not in his export.
        #expect(try await api.call("POST", "/v1/checkins/\(checkin)/complete", ["pin": "1357"], token: walk.ben.token).0 == 200)

        let (status, document) = try await api.call("GET", "/v1/me/export", token: walk.ben.token)
        #expect(status == 200)
        let messages = try #require(document["messages"] as? [[String: Any]])
        #expect(messages.map { $0["text"] as? String } == ["Ben's own words"], "\(messages)")
        #expect((document["answers"] as? [[String: Any]])?.map { $0["response"] as? String } == ["seen"])
        let media = try #require((document["media"] as? [[String: Any]])?.first)
        #expect(media["id"] as? String == photo["id"] as? String && media["sha256"] as? String == photo["sha256"] as? String
                && (media["url"] as? String)?.contains("sig=") == true, "\(media)")
        #expect((document["checkins"] as? [[String: Any]])?.map { $0["id"] as? String } == [checkin])
        #expect((document["devices"] as? [[String: Any]])?.map { $0["token"] as? String } == ["ben-ph…"])
        #expect((document["emergency_contacts"] as? [[String: Any]])?.first?["name"] as? String == "Mum")
        #expect((document["sessions"] as? [[String: Any]])?.count == 1 && (document["memberships"] as? [[String: Any]])?.count == 2)
        #expect((document["user"] as? [String: Any])?["id"] as? String == walk.ben.id)
        for _ in 0..<4 { #expect(try await api.call("GET", "/v1/me/export", token: walk.ben.token).0 == 200) }
        #expect(try await api.call("GET", "/v1/me/export", token: walk.ben.token).0 == 429)
        #expect(try await api.call("GET", "/v1/me/export").0 == 401)
        await api.stop()
    }

    @Test func aTenantIsFoundByItsSlugAndNothingElse() async throws {
        let api = try APIFixture()
        let (status, tenant) = try await api.call("GET", "/v1/tenants/\(api.tenant)")
        #expect(status == 200 && tenant["slug"] as? String == api.tenant && tenant["registration"] as? String == "open" && tenant["name"] is String
                && tenant["locale"] as? String == "en")
        #expect(Set(tenant.keys) == ["slug", "name", "registration", "locale"], "no id, nothing else")
        for slug in ["no-such-street", "BAD%20SLUG", String(repeating: "a", count: 300)] {
            #expect(try await api.call("GET", "/v1/tenants/\(slug)").0 == 404)
        }
        await api.stop()
    }
}
