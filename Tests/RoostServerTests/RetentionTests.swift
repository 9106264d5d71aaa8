import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// Retention over one server and the real database: what the purge takes (old messages, their
/// events, answers and closed alerts) and keeps (open alerts with their replies and answers,
/// everything younger), and how a cursor that fell behind learns of it.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct RetentionTests {
    let streams = StreamTests()

    /// Runs retention rounds of the fixture's tenant until `done` holds (another suite's node
    /// may purge the group first: the outcome, not who did it, is what is checked).
    func purge(_ api: APIFixture, until done: @escaping @Sendable (PostgresConnection) throws -> Bool) async throws {
        let jobs = RetentionJobs(pool: api.pool, runner: JobRunner(metrics: JobMetrics(), log: Log(level: .error)))
        let tenant = try await api.inTenant { tenant, _ in tenant }
        let finished = try await Poll.until {
            try await jobs.runOnce(tenant: tenant)
            return try await api.inTenant({ _, connection in try done(connection) })
        }
        #expect(finished, "the purge did not finish")
    }

    /// Makes the group's events through `seq` look `days` old.
    func age(_ api: APIFixture, _ group: String, through seq: Int, days: Double) async throws {
        try await api.inTenant { _, connection in
            try connection.query("""
                UPDATE group_events SET created_at = now() - \(days) * interval '1 day' WHERE group_id = \(UUID(uuidString: group)!) AND seq <= \(seq)
                """)
        }
    }

    func setTenantRetention(_ api: APIFixture, days: Int?) async throws {
        let slug = api.tenant
        let tenant = try await api.pool.withConnection { connection in
            try connection.withTransaction { try Retention.setTenant(slug: slug, days: days, on: $0) }
        }
        #expect(tenant?.retentionDays == days)
    }

    @Test func thePurgeTakesWhatCameOfAgeKeepsOpenAlertsAndTellsCursorsThatFellBehind() async throws {
        let api = try APIFixture(stream: true)
        let (ann, ben) = (try await api.person(email: "ann@example.org"), try await api.person(email: "ben@example.org"))
        let (_, created) = try await api.call("POST", "/v1/groups", ["name": "Elm Street"], token: ann.token)
        let group = try #require(created["id"] as? String)
        try await api.addMember(ben.id, to: group, role: "member")
        _ = try await streams.post(api, group, "old chat", as: ann)
        let (_, openAlert) = try await api.call("POST", "/v1/groups/\(group)/messages",
                                                ["client_msg_id": "o", "text": "Van circling", "kind": "alert", "severity": "red"], token: ann.token)
        let open = try #require(openAlert["seq"] as? Int)
        let (replied, reply) = try await api.call("POST", "/v1/groups/\(group)/messages",
                                                  ["client_msg_id": "r", "text": "I see it too", "kind": "chat", "reply_to": open], token: ben.token)
        #expect(replied == 201, "\(reply)")
        let (_, closedAlert) = try await api.call("POST", "/v1/groups/\(group)/messages",
                                                  ["client_msg_id": "c", "text": "Gate open", "kind": "alert"], token: ann.token)
        let closed = try #require(closedAlert["seq"] as? Int)
        for seq in [open, closed] {
            #expect(try await api.call("POST", "/v1/groups/\(group)/alerts/\(seq)/ack", ["response": "seen"], token: ben.token).0 == 200)
        }
        #expect(try await api.call("POST", "/v1/groups/\(group)/alerts/\(closed)/close", [:], token: ann.token).0 == 200)
        let (_, before) = try await api.call("GET", "/v1/groups/\(group)", token: ann.token)
        let through = try #require(before["last_seq"] as? Int)
        #expect(before["oldest_seq"] as? Int == 1 && before["retention_days"] is NSNull)
        let young = try await streams.post(api, group, "young chat", as: ben)
        // Three days old, then one just inside the two days kept.
        try await age(api, group, through: young, days: 2 - 1.0 / 24)
        try await age(api, group, through: through, days: 3)

        try await setTenantRetention(api, days: 2)
        let gid = UUID(uuidString: group)!
        try await purge(api) { try RetentionStore().oldestSeq(group: gid, on: $0) == Int64(through + 1) }

        // Kept: the open alert (with its answer and the reply to it) and what is young; gone: the rest.
        let (_, messages) = try await api.call("GET", "/v1/groups/\(group)/messages", token: ann.token)
        let texts = (messages["items"] as? [[String: Any]] ?? []).compactMap { $0["text"] as? String }
        #expect(texts == ["young chat", "I see it too", "Van circling"], "\(texts)")
        let acks = try await api.inTenant { _, connection in
            try connection.query("SELECT seq FROM alert_acks WHERE group_id = \(gid) ORDER BY seq").rows.map { try $0.decode(Int.self, "seq") }
        }
        #expect(acks == [open])
        let (_, after) = try await api.call("GET", "/v1/groups/\(group)", token: ann.token)
        #expect(after["oldest_seq"] as? Int == through + 1)

        // REST: a cursor behind is 410 with the first kept seq; one at the edge reads on.
        let (gone, expired) = try await api.call("GET", "/v1/groups/\(group)/events?after=\(open)", token: ben.token)
        let error = expired["error"] as? [String: Any]
        #expect(gone == 410 && error?["code"] as? String == "expired" && error?["oldest_seq"] as? Int == through + 1, "\(expired)")
        let (ok, page) = try await api.call("GET", "/v1/groups/\(group)/events?after=\(through)", token: ben.token)
        #expect(ok == 200 && (page["items"] as? [[String: Any]])?.compactMap { $0["seq"] as? Int } == [young])

        // The stream: `reset`, then every kept event in order (not the open alert below the mark), then `resumed`.
        let (client, _) = try await streams.stream(api, ben, live: false)
        client.sendText(#"{"type":"resume","cursors":{"\#(group)":2}}"#)
        let reset = try #require(await client.receiveJSON())
        #expect(reset["type"] as? String == "reset" && reset["group_id"] as? String == group && reset["oldest_seq"] as? Int == through + 1, "\(reset)")
        let replayed = try await streams.next(client)
        #expect(replayed["seq"] as? Int == young)
        #expect(await client.receiveJSON()?["type"] as? String == "resumed")
        // A resume from the edge has nothing to reset.
        client.sendText(#"{"type":"resume","cursors":{"\#(group)":\#(through)}}"#)
        #expect(try await streams.next(client)["seq"] as? Int == young)

        // Closing the open alert lets the next purge take it and its reply; the mark stays.
        #expect(try await api.call("POST", "/v1/groups/\(group)/alerts/\(open)/close", [:], token: ann.token).0 == 200)
        try await api.inTenant { _, connection in try connection.query("UPDATE retention_jobs SET due_at = now() WHERE group_id = \(gid)") }
        try await purge(api) { try $0.query("SELECT 1 FROM messages WHERE group_id = \(gid) AND seq = \(open)").first == nil }
        let (_, last) = try await api.call("GET", "/v1/groups/\(group)/messages", token: ann.token)
        #expect((last["items"] as? [[String: Any]] ?? []).compactMap { $0["text"] as? String } == ["young chat"])
        #expect(try await api.inTenant { _, connection in try RetentionStore().oldestSeq(group: gid, on: connection) } == Int64(through + 1))
        // The job waits for the young message's turn (an hour on), and not much longer.
        let due = try await api.inTenant { _, connection in
            try connection.query("""
                SELECT j.due_at >= e.created_at + interval '2 days' AND j.due_at < now() + interval '61 minutes' AS exact
                FROM retention_jobs j, group_events e
                WHERE j.group_id = \(gid) AND e.group_id = \(gid) AND e.seq = \(young)
                """).first?.decode(Bool.self, "exact")
        }
        #expect(due == true)
        await api.stop()
    }

    @Test func theOwnerKeepsAGroupsHistoryForLessThanTheTenantAndNobodyElseMay() async throws {
        let api = try APIFixture()
        let (ann, ben, cy) = (try await api.person(email: "ann@example.org"), try await api.person(email: "ben@example.org"),
                              try await api.person(email: "cy@example.org"))
        let (_, created) = try await api.call("POST", "/v1/groups", ["name": "Oak Lane"], token: ann.token)
        let group = try #require(created["id"] as? String)
        try await api.addMember(ben.id, to: group, role: "admin")
        try await api.addMember(cy.id, to: group, role: "member")
        try await setTenantRetention(api, days: 30)

        let (changed, view) = try await api.call("PATCH", "/v1/groups/\(group)", ["retention_days": 7], token: ann.token)
        #expect(changed == 200 && view["retention_days"] as? Int == 7, "\(view)")
        let (longer, refused) = try await api.call("PATCH", "/v1/groups/\(group)", ["retention_days": 31], token: ann.token)
        #expect(longer == 400 && (refused["error"] as? [String: Any])?["field"] as? String == "retention_days", "\(refused)")
        for days in [0, 36_501] {
            #expect(try await api.call("PATCH", "/v1/groups/\(group)", ["retention_days": days], token: ann.token).0 == 400)
        }
        #expect(try await api.call("PATCH", "/v1/groups/\(group)", ["retention_days": 1], token: ben.token).0 == 403)
        #expect(try await api.call("PATCH", "/v1/groups/\(group)", ["retention_days": 1], token: cy.token).0 == 403)
        // An admin may still rename it: only the history setting is the owner's.
        #expect(try await api.call("PATCH", "/v1/groups/\(group)", ["name": "Oak Lane North"], token: ben.token).0 == 200)
        let (cleared, back) = try await api.call("PATCH", "/v1/groups/\(group)", ["retention_days": NSNull()], token: ann.token)
        #expect(cleared == 200 && back["retention_days"] is NSNull)

        // The change is in the group's log and its audit, and a group made later is scheduled too.
        let events = try await api.inTenant { _, connection in
            try connection.query("SELECT data->>'retention_days' AS days FROM group_events WHERE group_id = \(UUID(uuidString: group)!) AND event = 'group.updated' AND data ? 'retention_days' ORDER BY seq")
                .rows.map { try $0.decode(String?.self, "days") }
        }
        #expect(events == ["7", nil])
        let (_, later) = try await api.call("POST", "/v1/groups", ["name": "Later Close"], token: cy.token)
        let laterID = try #require((later["id"] as? String).flatMap(UUID.init(uuidString:)))
        let scheduled = try await api.inTenant { _, connection in
            try connection.query("SELECT due_at > now() + interval '29 days' AS later FROM retention_jobs WHERE group_id = \(laterID)")
                .first?.decode(Bool.self, "later")
        }
        #expect(scheduled == true)
        await api.stop()
    }
}
