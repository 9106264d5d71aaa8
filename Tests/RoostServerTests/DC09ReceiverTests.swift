import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// Roost's SIA DC-09 receiver on the API fixture's server and the real database, with an
/// independent panel: dc09-spt from PyPI (scripts/lib/dc09_panel.py) builds the frames, its
/// dialler sends plain ones, and its own answer check judges every reply; encrypted frames are
/// built as dc09-spt builds them with the cryptography package doing the AES.
@Suite(.enabled(if: TestDatabase.isConfigured && ProcessInfo.processInfo.environment["ROOST_TEST_DC09_PYTHON"] != nil,
                "needs TEST_DATABASE_URL and ROOST_TEST_DC09_PYTHON (scripts/test sets both)"))
struct DC09ReceiverTests {
    static let root = TestDatabase.migrationsDirectory.deletingLastPathComponent()

    struct Stage {
        let api: APIFixture
        let owner: APIFixture.Person
        let group: String
        let receiver: DC09Receiver
        let port: UInt16

        func alerts() async throws -> [[String: Any]] {
            try #require(try await api.call("GET", "/v1/groups/\(group)/alerts", token: owner.token).1["items"] as? [[String: Any]])
        }

        /// Every event of the group's log: what a frame that is refused must not add to.
        func events() async throws -> Int {
            let group = UUID(uuidString: self.group)!
            return try await api.inTenant { _, connection in
                try connection.query("SELECT count(*) AS n FROM group_events WHERE group_id = \(group)").rows[0].decode(Int.self, "n")
            }
        }

        /// A bridge of the group with a DC-09 identity; its id and the identity with its key.
        func panel(_ dc09: [String: Any], heartbeat: Int? = nil) async throws -> (bridge: String, dc09: [String: Any]) {
            var body: [String: Any] = ["name": "Panel \(dc09["account"] ?? "")", "burst": 200, "rate_per_minute": 6000, "dc09": dc09]
            if let heartbeat { body["heartbeat_s"] = heartbeat }
            let (status, created) = try await api.call("POST", "/v1/groups/\(group)/bridges", body, token: owner.token)
            #expect(status == 201, "\(created)")
            return (try #require((created["bridge"] as? [String: Any])?["id"] as? String), try #require(created["dc09"] as? [String: Any]))
        }

        func stop() async {
            receiver.stop()
            await api.stop()
        }
    }

    static func stage(_ api: APIFixture? = nil, idleMilliseconds: Int? = nil) async throws -> Stage {
        let api = try api ?? APIFixture(stream: true)
        let owner = try await api.person(email: "panel-owner-\(UUID().uuidString.prefix(6).lowercased())@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm Street"], token: owner.token).1["id"] as? String)
        // A window of ten minutes: a frame stamped by the panel is never stale for a busy machine's
        // delay (the codec's tests hold the standard's window).
        var limits = DC09Receiver.Limits()
        (limits.behindSeconds, limits.aheadSeconds) = (600, 600)
        if let idleMilliseconds { limits.idleMilliseconds = idleMilliseconds }
        let receiver = DC09Receiver(pool: api.pool, bridges: .announcingReturns(pool: api.pool), limits: limits, log: Log(level: .error))
        let port = try #require(try receiver.start(.inet(host: "127.0.0.1", port: 0), on: api.test.server))
        return Stage(api: api, owner: owner, group: group, receiver: receiver, port: port)
    }

    /// Account numbers unique to this run (the identity index spans every tenant of the database).
    static func account() -> String { String(UInt32.random(in: 0x1000_0000...0xFFFF_FFFF), radix: 16, uppercase: true) }

    /// scripts/lib/dc09_panel.py: its exit status and its last line as JSON.
    static func panel(_ arguments: String...) async throws -> (status: Int32, result: [String: Any]) {
        let python = try #require(ProcessInfo.processInfo.environment["ROOST_TEST_DC09_PYTHON"])
        let process = try RunningProcess(python, [root.appendingPathComponent("scripts/lib/dc09_panel.py").path] + arguments,
                                         environment: ["PATH": "/usr/bin:/bin"])
        let status = await process.wait()
        let last = process.output.split(separator: "\n").last.map(String.init) ?? ""
        let result = (try? JSONSerialization.jsonObject(with: Data(last.utf8))) as? [String: Any] ?? ["output": process.output]
        return (status, result)
    }

    static func json(_ value: [String: Any]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]), as: UTF8.self)
    }

    /// Sends one frame as dc09-spt builds it; the answer as its dialler judged it.
    static func send(_ stage: Stage, _ transport: String, _ spec: [String: Any]) async throws -> [String: Any] {
        let (status, result) = try await panel("send", "127.0.0.1", String(stage.port), transport, json(spec))
        #expect(status == 0, "\(result)")
        return result
    }

    /// Joins the stream of `token` and resumes from now.
    static func stream(_ stage: Stage, _ token: String) async throws -> WebSocketTestClient {
        let stream = try await WebSocketTestClient.connect(port: stage.api.test.port, path: "/v1/stream", token: token)
        #expect(await stream.receiveJSON()?["type"] as? String == "ready")
        stream.sendText(#"{"type":"resume","cursors":{}}"#)
        #expect(await stream.receiveJSON()?["type"] as? String == "resumed")
        return stream
    }

    /// The next event on `stream` that is not a notice.
    static func nextEvent(_ stream: WebSocketTestClient) async -> [String: Any]? {
        while let message = await stream.receiveJSON() {
            if message["type"] as? String == "event" { return message }
        }
        return nil
    }

    @Test func theDiallerReportsABurglaryAndItsRestoreOverTCPAndAMembersStreamSeesOneAlertOpenAndClose() async throws {
        let stage = try await Self.stage()
        let member = try await stage.api.person(email: "neighbour-\(UUID().uuidString.prefix(6).lowercased())@example.org")
        try await stage.api.addMember(member.id, to: stage.group, role: "member")
        let account = Self.account()
        _ = try await stage.panel(["line": "1", "account": account, "key_bits": 0])
        let stream = try await Self.stream(stage, member.token)

        // dc09-spt's dialler: it keeps a message queued until Roost acknowledges it, and numbers
        // its messages from 0001 (one run sends both: a second run would number its first 0001
        // again, which within the hour is a resend).
        let sent = try await Self.panel("dialler", "127.0.0.1", String(stage.port), "tcp", account, "1", "SIA",
                                        "[" + Self.json(["code": "BA", "zone": "3"]) + "," + Self.json(["code": "BR", "zone": "3"]) + "]")
        #expect(sent.status == 0 && sent.result["sent"] as? Bool == true, "\(sent.result)")
        let raised = try #require(await Self.nextEvent(stream))
        let message = try #require((raised["data"] as? [String: Any]))
        let alert = try #require(message["alert"] as? [String: Any])
        #expect(raised["event"] as? String == "message.created" && message["kind"] as? String == "alert", "\(raised)")
        #expect(alert["severity"] as? String == "red" && (message["text"] as? String)?.hasPrefix("Burglary, zone 3") == true, "\(message)")
        let closed = try #require(await Self.nextEvent(stream))
        #expect(closed["event"] as? String == "alert.closed" && (closed["data"] as? [String: Any])?["seq"] as? Int == raised["seq"] as? Int, "\(closed)")
        let alerts = try await stage.alerts()
        #expect(alerts.count == 1 && (alerts.first?["alert"] as? [String: Any])?["status"] as? String == "closed", "\(alerts)")
        #expect(stage.receiver.renderMetrics().contains(#"roost_dc09_messages_total{transport="tcp",outcome="ack"} 2"#))
        await stage.stop()
    }

    @Test(arguments: [128, 192, 256])
    func encryptedFramesAtEachKeySizeAreAcknowledgedOverTCPAndUDPAsTheDiallerAccepts(bits: Int) async throws {
        let stage = try await Self.stage()
        let account = Self.account()
        let (_, identity) = try await stage.panel(["receiver": "12", "line": "3", "account": account, "key_bits": bits])
        let key = try #require(identity["key"] as? String)
        #expect(key.count == bits / 4 && identity["key_bits"] as? Int == bits)
        var sequence = 0
        for transport in ["tcp", "udp"] {
            sequence += 1
            let link = try await Self.send(stage, transport, ["account": account, "receiver": "12", "line": "3", "key": key, "seq": sequence, "type": "NULL"])
            #expect(link["answer"] as? String == "ACK" && (link["raw"] as? String)?.contains("\"*ACK\"") == true, "\(transport): \(link)")
            #expect((link["offset"] as? Double).map { abs($0) < 30 } == true, "the encrypted ACK carries the receiver's time: \(link)")
            sequence += 1
            let zone = transport == "tcp" ? "5" : "6"
            let fire = try await Self.send(stage, transport, ["account": account, "receiver": "12", "line": "3", "key": key, "seq": sequence,
                                                              "type": "ADM-CID", "event": ["code": "110", "zone": zone, "q": "1"],
                                                              "extra": ["verification": "https://cam.example.org/clip/\(zone)", "lat": "55.6761", "lon": "12.5683"]])
            #expect(fire["answer"] as? String == "ACK", "\(transport): \(fire)")
        }
        let alerts = try await stage.alerts()
        #expect(alerts.count == 2 && alerts.allSatisfy { ($0["alert"] as? [String: Any])?["severity"] as? String == "red" }, "\(alerts.first ?? [:])")
        let fire = try #require(alerts.first { ($0["text"] as? String)?.hasPrefix("Fire, zone 005") == true })
        let details = try #require((fire["alert"] as? [String: Any])?["details"] as? [String: Any])
        let links = try #require((details["dc09"] as? [String: Any])?["links"] as? [[String: Any]], "\(details)")
        #expect(links.first?["href"] as? String == "https://cam.example.org/clip/5" && links.first?["text"] as? String == "Verification")
        let location = try #require(fire["location"] as? [String: Any])
        #expect(location["lat"] as? Double == 55.6761 && location["lon"] as? Double == 12.5683, "\(location)")
        #expect(stage.receiver.renderMetrics().contains(#"roost_dc09_messages_total{transport="udp",outcome="ack"} 2"#))
        await stage.stop()
    }

    @Test func aResentMessageIsAcknowledgedAgainAndRaisesNothingWhileTheSameEventUnderANewNumberIsARepeat() async throws {
        let stage = try await Self.stage()
        let account = Self.account()
        let (_, identity) = try await stage.panel(["line": "1", "account": account])
        let key = try #require(identity["key"] as? String)
        let spec: [String: Any] = ["account": account, "line": "1", "key": key, "seq": 7, "type": "SIA-DCS", "event": ["code": "PA", "zone": "2"]]
        #expect(try await Self.send(stage, "tcp", spec)["answer"] as? String == "ACK")
        let before = try await stage.events()
        // The ACK was lost: the panel sends the same message again, over UDP this time.
        #expect(try await Self.send(stage, "udp", spec)["answer"] as? String == "ACK")
        #expect(try await stage.events() == before, "a resend writes nothing")
        var again = spec
        again["seq"] = 8
        #expect(try await Self.send(stage, "tcp", again)["answer"] as? String == "ACK")
        let alerts = try await stage.alerts()
        #expect(alerts.count == 1 && (alerts.first?["alert"] as? [String: Any])?["repeat_count"] as? Int == 1, "\(alerts)")
        #expect(stage.receiver.renderMetrics().contains(#"roost_dc09_messages_total{transport="udp",outcome="duplicate"} 1"#))
        await stage.stop()
    }

    @Test func aWrongKeyABadCRCAStaleTimestampAPlainFrameAndAnUnknownAccountEachGetTheirAnswerAndWriteNothing() async throws {
        let stage = try await Self.stage()
        let account = Self.account()
        let (_, identity) = try await stage.panel(["line": "2", "account": account])
        let key = try #require(identity["key"] as? String)
        let before = try await stage.events()
        let burglary: [String: Any] = ["account": account, "line": "2", "key": key, "seq": 1, "type": "SIA-DCS", "event": ["code": "BA", "zone": "1"]]
        func answer(_ changes: [String: Any], _ transport: String = "tcp") async throws -> [String: Any] {
            try await Self.send(stage, transport, burglary.merging(changes) { $1 })
        }
        let wrong = String(repeating: "AB", count: 16)
        let wrongKey = try await answer(["key": wrong, "key_for_answer": key])
        #expect(wrongKey["answer"] as? String == "DUH", "a key that does not open the frame: \(wrongKey)")
        #expect(try await answer(["crc": "bad"])["answer"] as? String == "NAK")
        // A panel an hour slow: NAK with the receiver's time, which dc09-spt's dialler takes as
        // its offset (the receiver's time less its own true clock: about 0 here), and sends again.
        let stale = try await answer(["time_offset": -3600], "udp")
        #expect(stale["answer"] as? String == "NAK", "\(stale)")
        #expect((stale["offset"] as? Double).map { abs($0) < 30 } == true, "the NAK gives the receiver's time, so the panel can set its clock: \(stale)")
        #expect(try await answer(["key": NSNull()])["answer"] as? String == "DUH", "an account with a key takes no plain frame")
        #expect(try await answer(["account": Self.account()])["answer"] as? String == "DUH", "an unknown account")
        #expect(try await stage.events() == before, "nothing refused wrote anything")
        let metrics = stage.receiver.renderMetrics()
        #expect(metrics.contains(#"{transport="tcp",outcome="unknown_account"} 1"#) && metrics.contains(#"{transport="udp",outcome="nak"} 1"#), "\(metrics)")
        // And the panel with the right key is still heard.
        #expect(try await answer(["seq": 2])["answer"] as? String == "ACK")
        await stage.stop()
    }

    @Test func aDuressCodeIsASilentRedAlertThatOnlyTheOwnerAndAdminsSeeAndArePushed() async throws {
        let stage = try await Self.stage()
        let admin = try await stage.api.person(email: "admin-\(UUID().uuidString.prefix(6).lowercased())@example.org")
        let member = try await stage.api.person(email: "member-\(UUID().uuidString.prefix(6).lowercased())@example.org")
        try await stage.api.addMember(admin.id, to: stage.group, role: "admin")
        try await stage.api.addMember(member.id, to: stage.group, role: "member")
        for person in [stage.owner, admin, member] {
            #expect(try await stage.api.call("POST", "/v1/me/devices", ["platform": "fcm", "token": "phone-\(person.id)"], token: person.token).0 == 201)
        }
        let account = Self.account()
        // Disarmed by hand: a duress is red all the same.
        let (status, made) = try await stage.api.call("POST", "/v1/groups/\(stage.group)/bridges",
                                                      ["name": "Number 12", "arm": "disarmed", "dc09": ["line": "1", "account": account]], token: stage.owner.token)
        #expect(status == 201, "\(made)")
        let key = try #require((made["dc09"] as? [String: Any])?["key"] as? String)
        let streams = (owner: try await Self.stream(stage, stage.owner.token), admin: try await Self.stream(stage, admin.token),
                       member: try await Self.stream(stage, member.token))
        let duress: [String: Any] = ["account": account, "line": "1", "key": key, "seq": 1, "type": "ADM-CID", "event": ["code": "121", "zone": "4", "q": "1"]]
        #expect(try await Self.send(stage, "tcp", duress)["answer"] as? String == "ACK")
        for stream in [streams.owner, streams.admin] {
            let raised = try #require(await Self.nextEvent(stream))
            let alert = try #require((raised["data"] as? [String: Any])?["alert"] as? [String: Any], "\(raised)")
            #expect(raised["event"] as? String == "message.created" && alert["severity"] as? String == "red", "\(raised)")
            #expect(((raised["data"] as? [String: Any])?["text"] as? String)?.hasPrefix("Duress") == true)
        }
        // The member's stream: the next thing it hears is the burglary after it, never the duress.
        let burglary = duress.merging(["seq": 2, "event": ["code": "130", "zone": "1", "q": "1"]]) { $1 }
        #expect(try await Self.send(stage, "udp", burglary)["answer"] as? String == "ACK")
        let next = try #require(await Self.nextEvent(streams.member))
        #expect(((next["data"] as? [String: Any])?["text"] as? String)?.hasPrefix("Burglary") == true, "\(next)")
        let (_, memberAlerts) = try await stage.api.call("GET", "/v1/groups/\(stage.group)/alerts", token: member.token)
        let (_, adminAlerts) = try await stage.api.call("GET", "/v1/groups/\(stage.group)/alerts", token: admin.token)
        #expect((memberAlerts["items"] as? [[String: Any]])?.count == 1 && (adminAlerts["items"] as? [[String: Any]])?.count == 2,
                "the member reads the burglary only: \(memberAlerts)")
        let (_, memberMessages) = try await stage.api.call("GET", "/v1/groups/\(stage.group)/messages", token: member.token)
        #expect(!"\(memberMessages)".contains("Duress"))
        // Pushed to the owner's and the admin's phones only.
        let pushed = try await stage.api.inTenant { _, connection in
            try connection.query("""
                SELECT recipient FROM outbox WHERE channel = 'push' AND template = 'alert' AND data->'alert'->>'text' LIKE 'Duress%' ORDER BY recipient
                """).rows.map { try $0.decode(String.self, "recipient") }
        }
        #expect(pushed == ["phone-\(stage.owner.id)", "phone-\(admin.id)"].sorted(), "\(pushed)")
        // The restore closes it for the managers; the member hears nothing of it, and nothing reaches the chat.
        let restore = duress.merging(["seq": 3, "event": ["code": "121", "zone": "4", "q": "3"]]) { $1 }
        #expect(try await Self.send(stage, "tcp", restore)["answer"] as? String == "ACK")
        let burglaryOnAdmins = try #require(await Self.nextEvent(streams.admin))
        #expect(((burglaryOnAdmins["data"] as? [String: Any])?["text"] as? String)?.hasPrefix("Burglary") == true)
        let closed = try #require(await Self.nextEvent(streams.admin))
        #expect(closed["event"] as? String == "alert.closed", "\(closed)")
        let (_, memberEvents) = try await stage.api.call("GET", "/v1/groups/\(stage.group)/events", token: member.token)
        #expect(!"\(memberEvents)".contains("Duress") && !"\(memberEvents)".contains("alert.closed"), "\(memberEvents)")
        await stage.stop()
    }

    @Test func theHoldUpCodeIsDuressWhereTheBridgeSaysSo() {
        let holdUp = DC09Event(code: "HA", qualifier: nil, zone: "2", area: nil)
        #expect(DC09Effects.effect(of: holdUp, account: "1234") == .trigger(dedupKey: "1234:2:HA", summary: "Hold-up, zone 2", severity: .red))
        #expect(DC09Effects.effect(of: holdUp, account: "1234", holdUpIsDuress: true) == .duress(dedupKey: "1234:2:DA", summary: "Duress, zone 2"))
    }

    @Test func anIdentityIsOneBridgesAcrossTenantsAndAnotherTenantsReceiverNumberWritesOnlyThere() async throws {
        let stage = try await Self.stage()
        let other = try await Self.stage()
        let account = Self.account()
        let (_, mine) = try await stage.panel(["receiver": "1", "line": "1", "account": account])
        // Another tenant's installer reuses the account number: refused, saying why.
        let (status, refused) = try await other.api.call("POST", "/v1/groups/\(other.group)/bridges",
                                                         ["name": "Same panel", "dc09": ["receiver": "1", "line": "1", "account": account.lowercased()]],
                                                         token: other.owner.token)
        #expect(status == 409 && ((refused["error"] as? [String: Any])?["message"] as? String)?.contains("another account number") == true, "\(refused)")
        // Under its own receiver number the same account is the other tenant's.
        let (_, theirs) = try await other.panel(["receiver": "2", "line": "1", "account": account])
        let event: [String: Any] = ["account": account, "line": "1", "seq": 1, "type": "ADM-CID", "event": ["code": "130", "zone": "9", "q": "1"]]
        #expect(try await Self.send(stage, "tcp", event.merging(["receiver": "2", "key": try #require(theirs["key"] as? String)]) { $1 })["answer"] as? String == "ACK")
        let (theirAlerts, myAlerts) = (try await other.alerts(), try await stage.alerts())
        #expect(theirAlerts.count == 1 && myAlerts.isEmpty, "the frame went to the tenant whose identity it named")
        // A receiver number nobody holds, with either key: nothing anywhere.
        for key in [mine["key"], theirs["key"]] {
            let answer = try await Self.send(stage, "udp", event.merging(["receiver": "3", "key": try #require(key as? String), "seq": 2]) { $1 })
            #expect(answer["answer"] as? String == "DUH", "\(answer)")
        }
        let (theirsAfter, mineAfter) = (try await other.alerts(), try await stage.alerts())
        #expect(theirsAfter.count == 1 && mineAfter.isEmpty)
        // Revoked, the identity is free for another bridge.
        let list = try #require(try await stage.api.call("GET", "/v1/groups/\(stage.group)/bridges", token: stage.owner.token).1["items"] as? [[String: Any]])
        let shown = try #require(list.first?["dc09"] as? [String: Any])
        #expect(shown["account"] as? String == account && shown["key"] == nil, "the key is shown once: \(shown)")
        let id = try #require(list.first?["id"] as? String)
        #expect(try await stage.api.call("DELETE", "/v1/groups/\(stage.group)/bridges/\(id)", token: stage.owner.token).0 == 204)
        _ = try await other.panel(["receiver": "1", "line": "1", "account": account])
        await other.stop()
        await stage.stop()
    }

    @Test func aPanelThatStopsItsLinkTestsIsAnnouncedOfflineAndItsNextLinkTestBringsItBack() async throws {
        let stage = try await Self.stage()
        let account = Self.account()
        let (bridge, identity) = try await stage.panel(["line": "1", "account": account], heartbeat: 90)
        let key = try #require(identity["key"] as? String)
        let stream = try await Self.stream(stage, stage.owner.token)
        let link: [String: Any] = ["account": account, "line": "1", "key": key, "seq": 1, "type": "NULL"]
        #expect(try await Self.send(stage, "udp", link)["answer"] as? String == "ACK")
        // Two link tests missed (the clock moved by hand): the watch announces it.
        try await stage.api.pool.withConnection { connection in
            try connection.query("UPDATE bridge_watch SET silent_after = now() - interval '1 second' WHERE bridge_id = \(UUID(uuidString: bridge)!)")
        }
        _ = try await BridgeNotices.sweep(pool: stage.api.pool, runner: JobRunner(metrics: JobMetrics(), log: Log(level: .error)))
        let offline = try #require(await stream.receiveJSON())
        #expect(offline["event"] as? String == "bridge.offline" && (offline["data"] as? [String: Any])?["bridge_id"] as? String == bridge, "\(offline)")
        // A periodic test report (Contact ID 602) counts as a link test too.
        let test = link.merging(["seq": 2, "type": "ADM-CID", "event": ["code": "602", "zone": "0", "q": "1"]]) { $1 }
        #expect(try await Self.send(stage, "tcp", test)["answer"] as? String == "ACK")
        let online = try #require(await stream.receiveJSON())
        #expect(online["event"] as? String == "bridge.online", "\(online)")
        #expect(try await stage.alerts().isEmpty, "link tests raise nothing")
        await stage.stop()
    }

    @Test func openingAndClosingAreNoticesInTheChatAndUnknownCodesAloneAreRefused() async throws {
        let stage = try await Self.stage()
        let account = Self.account()
        _ = try await stage.panel(["line": "1", "account": account, "key_bits": 0])
        let opened: [String: Any] = ["account": account, "line": "1", "seq": 1, "type": "ADM-CID", "event": ["code": "401", "user": "3", "q": "1"]]
        #expect(try await Self.send(stage, "tcp", opened)["answer"] as? String == "ACK")
        let messages = try #require(try await stage.api.call("GET", "/v1/groups/\(stage.group)/messages", token: stage.owner.token).1["items"] as? [[String: Any]])
        #expect(messages.count == 1 && messages.first?["kind"] as? String == "chat" && (messages.first?["text"] as? String)?.hasPrefix("Opened or closed") == true,
                "\(messages)")
        let unknown = opened.merging(["seq": 2, "event": ["code": "999", "zone": "1", "q": "1"]]) { $1 }
        #expect(try await Self.send(stage, "tcp", unknown)["answer"] as? String == "DUH")
        await stage.stop()
    }

    /// A plain frame, LF to CR, as the codec reads it.
    static func plainFrame(_ body: String) -> [UInt8] {
        let bytes = Array(body.utf8)
        return [0x0A] + Array(String(format: "%04X%04X", DC09.crc16(bytes), bytes.count).utf8) + bytes + [0x0D]
    }

    @Test func anAddressThatKeepsBeingRefusedGetsNoAnswerUntilItsBucketRefills() async throws {
        let clock = ManualClock()
        let rate = TokenBuckets<String>(perMinute: 60, burst: 3, now: { Double(clock.now()) / 1e9 })
        for _ in 0..<3 {
            #expect(rate.allows("203.0.113.9"))
            rate.charge("203.0.113.9")
        }
        #expect(!rate.allows("203.0.113.9") && rate.allows("203.0.113.10"), "one address's refusals cost only its own bucket")
        clock.advance(milliseconds: 1000)
        #expect(rate.allows("203.0.113.9"), "a token a second comes back")

        // The receiver: three unknown accounts answered DUH, the fourth frame not at all.
        let stage = try await Self.stage()
        var limits = DC09Receiver.Limits()
        limits.addressBurst = 3
        let receiver = DC09Receiver(pool: stage.api.pool, bridges: .announcingReturns(pool: stage.api.pool), limits: limits, log: Log(level: .error),
                                    addressClock: { clock.now() })
        for index in 0..<3 {
            let reply = await receiver.answer(Self.plainFrame("\"NULL\"000\(index)L1#\(Self.account())[]"), from: "198.51.100.7", transport: .tcp)
            #expect(reply.map { String(decoding: $0, as: UTF8.self).contains("\"DUH\"") } == true)
        }
        #expect(await receiver.answer(Self.plainFrame("\"NULL\"0004L1#\(Self.account())[]"), from: "198.51.100.7", transport: .tcp) == nil)
        #expect(receiver.renderMetrics().contains(#"{transport="tcp",outcome="unanswered"} 1"#))
        await stage.stop()
    }

    @Test func framesSplitAndJoinedOnTCPAreAnsweredInOrderAndAQuietConnectionIsClosed() async throws {
        let stage = try await Self.stage()
        let account = Self.account()
        _ = try await stage.panel(["line": "1", "account": account, "key_bits": 0])
        let client = try TestClient(port: stage.port)
        func answers(_ count: Int) async -> [String] {
            await offload {
                var bytes: [UInt8] = []
                while bytes.filter({ $0 == 0x0D }).count < count, let more = client.readSome(), !more.isEmpty { bytes += more }
                // By bytes: "\r\n" (one answer's end, the next one's start) is a single Character.
                return bytes.split(separator: 0x0D).map { String(decoding: $0.dropFirst(9), as: UTF8.self) }
            }
        }
        // Line noise, then two frames in one write: two answers, in order.
        client.send(Array("+++AT\r".utf8) + Self.plainFrame("\"NULL\"0001L1#\(account)[]") + Self.plainFrame("\"NULL\"0002L1#\(account)[]"))
        let joined = await answers(2)
        #expect(joined == ["\"ACK\"0001L1#\(account)[]", "\"ACK\"0002L1#\(account)[]"], "\(joined)")
        // One frame a byte at a time.
        for byte in Self.plainFrame("\"NULL\"0003L1#\(account)[]") { client.send([byte]) }
        let split = await answers(1)
        #expect(split == ["\"ACK\"0003L1#\(account)[]"], "\(split)")
        await stage.stop()
        // A connection that stays quiet is closed by the receiver after its idle limit.
        let quiet = try await Self.stage(idleMilliseconds: 200)
        #expect(await (try TestClient(port: quiet.port)).waitForClose())
        await quiet.stop()
    }

    @Test func theBridgeRoutesCheckTheIdentity() async throws {
        let stage = try await Self.stage()
        for (dc09, field) in [(["line": "G1", "account": "1234"], "dc09.line"), (["line": "1", "account": "12"], "dc09.account"),
                              (["line": "1", "account": "1234", "receiver": "1234567"], "dc09.receiver"),
                              (["line": "1", "account": "1234", "key_bits": 64] as [String: Any], "dc09.key_bits")] {
            let (status, body) = try await stage.api.call("POST", "/v1/groups/\(stage.group)/bridges", ["name": "Bad", "dc09": dc09], token: stage.owner.token)
            #expect(status == 400 && (body["error"] as? [String: Any])?["field"] as? String == field, "\(dc09): \(body)")
        }
        await stage.stop()
    }
}
