import Foundation
import RoostFanout
import RoostHTTP
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// openapi.yaml and asyncapi.yaml held to the server: the router's routes are exactly the
/// operations openapi.yaml describes, both files parse and resolve, and the frames a real
/// stream sends conform to asyncapi.yaml (validated with jsonschema through scripts/lib/spec.py).
/// REST responses are held to openapi.yaml by schemathesis (scripts/api-fuzz).
@Suite(.enabled(if: TestDatabase.isConfigured && SpecTool.python != nil, "needs TEST_DATABASE_URL and ROOST_TEST_PYTHON (scripts/test sets both)"))
struct APISpecTests {
    @Test func everyRouteIsInOpenAPIAndEveryOperationThereIsARoute() async throws {
        let pool = ConnectionPool(configuration: TestDatabase.configuration(), options: .init(maxConnections: 1))
        defer { pool.close() }
        let router = try RoostCommands.routes(ServerConfiguration(), pool: pool, hub: StreamHub.make(pool: pool, queueLimit: 1 << 20),
                                          hashingThreads: 1)
        // `{gid:uuid}` in the router is `{gid}` in OpenAPI.
        let served = Set(router.patterns.map { route in
            "\(route.method.rawValue) " + route.pattern.replacingOccurrences(of: #":[a-z]+\}"#, with: "}", options: .regularExpression)
        })
        let described = Set(try #require(try await SpecTool.run("operations") as? [String]))
        #expect(served.subtracting(described).sorted() == [], "routes missing from openapi.yaml")
        #expect(described.subtracting(served).sorted() == [], "operations in openapi.yaml that no route serves")
        #expect(served.count >= 54)
        // The test-only echo exists only behind its flag, so it is not part of the API.
        var echo = ServerConfiguration()
        echo.conformanceEcho = true
        let withEcho = try RoostCommands.routes(echo, pool: pool, hub: StreamHub.make(pool: pool, queueLimit: 1 << 20), hashingThreads: 1)
        #expect(withEcho.patterns.count == router.patterns.count + 1)
    }

    /// The audit's `action` enum in openapi.yaml is every action Roost records (an action missing
    /// there made schemathesis fail on a group whose area had been set).
    @Test func theAuditActionsOpenAPINamesAreTheOnesRoostRecords() throws {
        let spec = try String(contentsOf: SpecTool.root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        let start = try #require(spec.range(of: "enum: [group.updated"))
        let end = try #require(spec[start.upperBound...].firstIndex(of: "]"))
        let listed = spec[spec.index(start.lowerBound, offsetBy: "enum: [".count)..<end]
            .split(whereSeparator: { $0 == "," || $0.isWhitespace }).map(String.init)
        #expect(listed.sorted() == AuditAction.all.map(\.name).sorted())
    }

    @Test func bothSpecsParseResolveAndAgreeOnTheEvents() async throws {
        let summary = try #require(try await SpecTool.run("check") as? [String: Any])
        #expect((summary["openapi"] as? String)?.hasPrefix("3.1.") == true)
        #expect(summary["asyncapi"] as? String == "3.0.0")
        #expect(summary["unresolved"] as? [String] == [])
        #expect(summary["duplicate_operation_ids"] as? [String] == [])
        #expect(summary["events_agree"] as? Bool == true)
        #expect(summary["stream_messages"] as? [String] == ["error", "event", "notice", "ready", "reset", "resume", "resumed"])
    }

    /// Drives every kind of group event and the notices through a real stream, then validates
    /// each frame received against asyncapi.yaml's schema for its type.
    @Test func everyFrameAStreamSendsConformsToAsyncAPI() async throws {
        let api = try APIFixture(stream: true)
        let owner = try await api.person(email: "olga@example.org")
        let member = try await api.person(email: "max@example.org")
        let passerby = try await api.person(email: "pia@example.org")
        try await api.inTenant { _, connection in try connection.query("UPDATE users SET email_verified = true WHERE email = 'max@example.org'") }
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Spec street"], token: owner.token).1["id"] as? String)
        var frames: [String] = []
        func open(_ person: APIFixture.Person) async throws -> WebSocketTestClient {
            let client = try await WebSocketTestClient.connect(port: api.test.port, path: "/v1/stream", token: person.token)
            frames.append(try #require(await client.receiveText()))  // ready
            client.sendText(#"{"type":"resume","cursors":{}}"#)
            frames.append(try #require(await client.receiveText()))  // resumed
            return client
        }
        func call(_ method: String, _ path: String, _ body: [String: Any]? = nil, as person: APIFixture.Person) async throws -> [String: Any] {
            let (status, answer) = try await api.call(method, path, body, token: person.token)
            #expect((200..<300).contains(status), "\(method) \(path): \(status) \(answer)")
            return answer
        }
        let ownerStream = try await open(owner)
        let memberStream = try await open(member)

        let invitation = try await call("POST", "/v1/groups/\(group)/invitations", ["email": "max@example.org"], as: owner)
        frames.append(try #require(await memberStream.receiveText()))  // invitation.received
        _ = try await call("POST", "/v1/invitations/accept", ["invitation_id": invitation["id"] as Any], as: member)
        _ = try await call("PATCH", "/v1/groups/\(group)", ["description": "Spec street and the lane"], as: owner)
        let chat = try await call("POST", "/v1/groups/\(group)/messages", ["client_msg_id": "c1", "text": "Hello", "kind": "chat"], as: owner)
        let alert = try await call("POST", "/v1/groups/\(group)/messages",
                                   ["client_msg_id": "a1", "text": "Smoke", "kind": "alert", "severity": "red",
                                    "location": ["lat": 55.67, "lon": 12.57, "accuracy_m": 8]], as: owner)
        let seq = try #require(alert["seq"] as? Int)
        _ = try await call("POST", "/v1/groups/\(group)/alerts/\(seq)/ack", ["response": "on_my_way", "note": "2 min"], as: member)
        _ = try await call("POST", "/v1/groups/\(group)/alerts/\(seq)/live-location", ["lat": 55.671, "lon": 12.571, "accuracy_m": 5, "battery": 64],
                           as: member)
        _ = try await call("POST", "/v1/groups/\(group)/alerts/\(seq)/close", ["resolution": "a bonfire"], as: owner)
        _ = try await call("POST", "/v1/groups/\(group)/alerts/\(seq)/reopen", as: owner)
        _ = try await call("POST", "/v1/groups/\(group)/read", ["seq": seq], as: owner)
        _ = try await call("DELETE", "/v1/groups/\(group)/messages/\(try #require(chat["seq"] as? Int))", as: owner)
        _ = try await call("PATCH", "/v1/groups/\(group)/members/\(member.id)", ["role": "admin"], as: owner)
        let key = try #require(try await call("POST", "/v1/groups/\(group)/bridges", ["name": "Panel"], as: owner)["key"] as? String)
        for _ in 0..<2 {
            let (status, _) = try await api.call("POST", "/v1/bridge/alerts", ["action": "trigger", "dedup_key": "zone-1", "summary": "Siren",
                                                                              "details": ["zone": 1]], token: key)
            #expect(status == 201 || status == 200)
        }
        let checkin = try #require(try await call("POST", "/v1/checkins", ["group_id": group, "due_in_s": 600, "note": "walking home"],
                                                  as: owner)["id"] as? String)
        _ = try await call("POST", "/v1/checkins/\(checkin)/extend", ["due_in_s": 900], as: owner)
        // The deadline passes (a round at a chosen time): the prompt notice to the walker's stream.
        let tenant = try await api.inTenant { tenant, _ in tenant }
        let rounds = CheckinDeadlines(pool: api.pool, runner: JobRunner(metrics: JobMetrics(), log: Log(level: .error)))
        #expect(try await rounds.runOnce(now: Date() + 1000, tenant: tenant).count == 1)
        _ = try await call("POST", "/v1/checkins/\(checkin)/complete", as: owner)
        let calledOff = try #require(try await call("POST", "/v1/checkins", ["group_id": group, "due_in_s": 600], as: owner)["id"] as? String)
        _ = try await call("POST", "/v1/checkins/\(calledOff)/cancel", as: owner)
        // "Are you OK?": answered (to the member's stream, then the owner's), then one that expires.
        let asked = try #require(try await call("POST", "/v1/checkin-requests", ["user_id": member.id, "group_id": group], as: owner)["id"] as? String)
        _ = try await call("POST", "/v1/checkin-requests/\(asked)/answer", ["status": "safe"], as: member)
        _ = try await call("POST", "/v1/checkin-requests", ["user_id": member.id, "group_id": group, "note": "still there?"], as: owner)
        let expiries = CheckinRequestExpiries(pool: api.pool, runner: JobRunner(metrics: JobMetrics(), log: Log(level: .error)))
        #expect(try await expiries.runOnce(now: Date() + 400, tenant: tenant).count == 1)
        try await api.addMember(passerby.id, to: group, role: "member")
        _ = try await call("DELETE", "/v1/groups/\(group)/members/\(passerby.id)", as: owner)
        _ = try await call("DELETE", "/v1/groups/\(group)/members/\(member.id)", as: member)
        ownerStream.sendText("[]")

        // The owner's stream: every event above and the error for the bad frame (the error is
        // answered at once; the last event may still be on its way from PostgreSQL).
        var events: [String] = []
        var answered = false
        while !(answered && events.contains("member.left")) {
            let text = try #require(await ownerStream.receiveText(), "the stream ended after \(events)")
            frames.append(text)
            let frame = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            if frame["type"] as? String == "error" { answered = true } else { events.append(frame["event"] as? String ?? "?") }
        }
        #expect(Set(events) == ["member.joined", "group.updated", "message.created", "alert.acknowledged", "alert.closed", "alert.reopened",
                                "message.redacted", "member.role_changed", "alert.repeated", "checkin.started", "checkin.extended",
                                "checkin.prompt", "checkin.completed", "checkin.cancelled", "checkin_request.answered",
                                "checkin_request.expired", "member.removed",
                                "member.left", "read.updated", "location.updated", "location.ended"])
        // The member's stream: its events from joining to leaving, then the group.removed notice.
        while true {
            let text = try #require(await memberStream.receiveText(), "the member's stream ended early")
            frames.append(text)
            if text.contains(#""group.removed""#) { break }
        }
        // Retention purges the group's first events: a resume from the start is told `reset`.
        let gid = try #require(UUID(uuidString: group))
        try await api.inTenant { _, connection in
            try connection.query("UPDATE group_events SET created_at = now() - interval '3 days' WHERE group_id = \(gid) AND seq <= 3")
        }
        let slug = api.tenant
        _ = try await api.pool.withConnection { connection in try connection.withTransaction { try Retention.setTenant(slug: slug, days: 2, on: $0) } }
        let purges = RetentionJobs(pool: api.pool, runner: JobRunner(metrics: JobMetrics(), log: Log(level: .error)))
        // Rounds until it is done, whichever node of another suite claimed it meanwhile.
        try await Poll.until {
            if try await api.inTenant({ _, connection in try RetentionStore().oldestSeq(group: gid, on: connection) }) == 4 { return true }
            try await purges.runOnce(tenant: tenant)
            return false
        }
        ownerStream.sendText(#"{"type":"resume","cursors":{"\#(group)":0}}"#)
        let reset = try #require(await ownerStream.receiveText())
        #expect(reset.contains(#""type":"reset""#), "\(reset)")
        frames.append(reset)

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("roost-frames-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        try frames.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        let problems = try #require(try await SpecTool.run("frames", file.path) as? [String])
        #expect(problems == [], "\(problems.joined(separator: "\n"))")
        #expect(frames.count > 30)
        await api.stop()
    }
}

/// scripts/lib/spec.py run with the pinned tools' Python (`ROOST_TEST_PYTHON`).
enum SpecTool {
    static let python = ProcessInfo.processInfo.environment["ROOST_TEST_PYTHON"]
    static let root = TestDatabase.migrationsDirectory.deletingLastPathComponent()

    static func run(_ command: String, _ arguments: String...) async throws -> Any {
        let outcome = try await Subprocess.run(
            python!, [root.appendingPathComponent("scripts/lib/spec.py").path, command, root.path] + arguments)
        guard outcome.status == 0 else { throw SubprocessError("spec.py \(command) failed: \(outcome.output)") }
        return try JSONSerialization.jsonObject(with: Data(outcome.output.utf8))
    }
}
