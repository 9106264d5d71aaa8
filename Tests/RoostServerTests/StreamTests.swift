import Foundation
import RoostFanout
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// `/v1/stream` against the real database: ready, live events through LISTEN/NOTIFY, resume
/// without gaps or duplicates, membership and session changes taking effect at once.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct StreamTests {
    func group(_ api: APIFixture, _ owner: APIFixture.Person, _ name: String) async throws -> String {
        try #require(try await api.call("POST", "/v1/groups", ["name": name], token: owner.token).1["id"] as? String)
    }

    func post(_ api: APIFixture, _ group: String, _ text: String, as person: APIFixture.Person, kind: String = "chat") async throws -> Int {
        let (status, body) = try await api.call("POST", "/v1/groups/\(group)/messages",
                                                ["client_msg_id": UUID().uuidString, "text": text, "kind": kind], token: person.token)
        #expect(status == 201, "\(body)")
        return try #require(body["seq"] as? Int)
    }

    /// A stream past `ready`; with `live`, past an empty resume too, so live events flow at once.
    func stream(_ api: APIFixture, _ person: APIFixture.Person, live: Bool = true) async throws -> (WebSocketTestClient, [String: Any]) {
        let client = try await WebSocketTestClient.connect(port: api.test.port, path: "/v1/stream", token: person.token)
        let ready = try #require(await client.receiveJSON())
        #expect(ready["type"] as? String == "ready")
        if live {
            client.sendText(#"{"type":"resume","cursors":{}}"#)
            // A notice has no seq and may come at any time (API.md), so one sent just before this
            // stream connected (a live place, say) can come before `resumed`; an event cannot.
            var frame = await client.receiveJSON()
            while frame?["type"] as? String == "notice" { frame = await client.receiveJSON() }
            #expect(frame?["type"] as? String == "resumed", "\(frame ?? [:])")
        }
        return (client, ready)
    }

    /// The next frame of type `event` (or whatever `type` says).
    func next(_ client: WebSocketTestClient, _ type: String = "event") async throws -> [String: Any] {
        let frame = try #require(await client.receiveJSON(), "no \(type) frame")
        #expect(frame["type"] as? String == type, "\(frame)")
        return frame
    }

    @Test func readyComesFirstThenEachNewEventLive() async throws {
        let api = try APIFixture(stream: true)
        let owner = try await api.person(email: "ana@example.org")
        let elm = try await group(api, owner, "Elm")
        let (client, ready) = try await stream(api, owner)
        #expect(ready["user_id"] as? String == owner.id)
        let groups = try #require(ready["groups"] as? [[String: Any]])
        #expect(groups.count == 1 && groups[0]["id"] as? String == elm && groups[0]["last_seq"] as? Int == 1)

        let seq = try await post(api, elm, "Van parked with engine running", as: owner, kind: "alert")
        let event = try await next(client)
        #expect(event["group_id"] as? String == elm && event["seq"] as? Int == seq && event["event"] as? String == "message.created")
        let message = try #require(event["data"] as? [String: Any])
        #expect(message["text"] as? String == "Van parked with engine running")
        #expect((message["alert"] as? [String: Any])?["severity"] as? String == "amber")
        #expect((message["author"] as? [String: Any])?["display_name"] as? String == "ana")
        #expect((event["at"] as? String)?.hasSuffix("Z") == true)
        await api.stop()
    }

    /// A lossy failover, played behind the node's back: the group's log and counter go back to
    /// its first message. The next audit finds the log shorter than what this node delivered,
    /// tells the stream to reset from there, and the message that then takes a lost seq reaches it.
    @Test func aGroupWhoseLogWasRolledBackBehindTheNodesBackIsResetOnItsStreams() async throws {
        let api = try APIFixture(stream: true)
        let owner = try await api.person(email: "di@example.org")
        let elm = try await group(api, owner, "Elm")
        let (client, _) = try await stream(api, owner)
        var seqs: [Int] = []
        for text in ["one", "two", "three"] {
            let seq = try await post(api, elm, text, as: owner)
            #expect(try await next(client)["seq"] as? Int == seq)
            seqs.append(seq)
        }
        let kept = Int64(seqs[0])
        try await api.inTenant { _, connection in
            let group = UUID(uuidString: elm)!
            try connection.query("DELETE FROM messages WHERE group_id = \(group) AND seq > \(kept)")
            try connection.query("DELETE FROM group_events WHERE group_id = \(group) AND seq > \(kept)")
            try connection.query("UPDATE group_seqs SET last_seq = \(kept) WHERE group_id = \(group)")
        }
        let hub = try #require(api.hub)
        let before = hub.logRegressions
        await hub.audit(grace: .zero)
        #expect(hub.logRegressions == before + 1)
        let reset = try await next(client, "reset")
        #expect(reset["group_id"] as? String == elm && reset["oldest_seq"] as? Int == seqs[0] + 1, "\(reset)")
        // The next message takes the first lost seq, and reaches the stream.
        let reused = try await post(api, elm, "after the failover", as: owner)
        #expect(reused == seqs[1])
        let event = try await next(client)
        #expect(event["seq"] as? Int == reused && (event["data"] as? [String: Any])?["text"] as? String == "after the failover", "\(event)")
        await api.stop()
    }

    @Test func aChatLineWhoseNoticeWasLostReachesTheStreamAtTheNextAudit() async throws {
        let api = try APIFixture(stream: true)
        let owner = try await api.person(email: "cy@example.org")
        let elm = try await group(api, owner, "Elm")
        let (client, _) = try await stream(api, owner)
        // A chat line's notice goes just after its commit.
        let first = try await post(api, elm, "Gate left open", as: owner)
        #expect(try await next(client)["seq"] as? Int == first)

        // Committed with its notice kept for after the commit and never sent, as a node that
        // stopped between the two would leave it.
        let lost = try await api.inTenant { tenant, connection in
            try GroupEventLog().append(tenant: tenant, group: UUID(uuidString: elm)!, event: .messageCreated, actorType: .user,
                                       actorID: UUID(uuidString: owner.id), data: EventDataText(#"{"text":"lost"}"#), notice: .afterCommit,
                                       on: connection).event.seq
        }
        let hub = try #require(api.hub)
        #expect(hub.groupsFoundBehind == 0)
        await hub.audit(grace: .zero)
        #expect(hub.groupsFoundBehind == 1)
        let event = try await next(client)
        #expect(event["seq"] as? Int == Int(lost) && (event["data"] as? [String: Any])?["text"] as? String == "lost")
        // A kept notice sent once the caller has committed needs no audit.
        let tenant = try await api.inTenant { tenant, _ in tenant }
        let kept = try await api.pool.withConnection { connection in
            let seq = try connection.withTenantTransaction(tenant) {
                try GroupEventLog().append(tenant: tenant, group: UUID(uuidString: elm)!, event: .messageCreated, actorType: .user,
                                           actorID: UUID(uuidString: owner.id), data: EventDataText(#"{"text":"kept"}"#), notice: .afterCommit,
                                           on: $0).event.seq
            }
            try GroupEventLog.sendKeptNotice(on: connection)
            return seq
        }
        #expect(try await next(client)["seq"] as? Int == Int(kept))
        // And the stream goes on in order from there.
        let after = try await post(api, elm, "Closed it", as: owner)
        #expect(try await next(client)["seq"] as? Int == after)
        #expect(after == Int(lost) + 2)
        await api.stop()
    }

    @Test func resumeReplaysFromEachCursorWhileWritersPostThenGoesLiveWithoutGapsOrDuplicates() async throws {
        let api = try APIFixture(stream: true)
        let owner = try await api.person(email: "bo@example.org")
        let oak = try await group(api, owner, "Oak")
        let ash = try await group(api, owner, "Ash")
        for index in 0..<30 { _ = try await post(api, oak, "before \(index)", as: owner) }
        let (client, _) = try await stream(api, owner, live: false)

        // Writers keep posting to both groups while the replay runs.
        let (port, token) = (api.test.port, owner.token)
        let writer = Task {
            let other = try APIFixture.Client(port: port)
            for index in 0..<40 {
                for target in [oak, ash] {
                    let (status, _) = try await other.call("POST", "/v1/groups/\(target)/messages",
                                                           ["client_msg_id": "w\(index)-\(target)", "text": "during \(index)", "kind": "chat"],
                                                           token: token)
                    #expect(status == 201)
                }
            }
        }
        client.sendText(#"{"type":"resume","cursors":{"\#(oak)":5,"\#(ash)":0}}"#)
        var seen: [String: [Int]] = [oak: [], ash: []]
        var resumed: [String: Any]?
        try await writer.value
        let lastSeq = try await api.inTenant { _, connection in
            try [oak, ash].map { try GroupStore().group(id: UUID(uuidString: $0)!, on: connection)!.lastSeq }
        }
        while (seen[oak]?.last ?? 0) < Int(lastSeq[0]) || (seen[ash]?.last ?? 0) < Int(lastSeq[1]) || resumed == nil {
            let frame = try #require(await client.receiveJSON(), "stream ended; saw \(seen.mapValues(\.count))")
            switch frame["type"] as? String {
            case "event": seen[frame["group_id"] as! String, default: []].append(frame["seq"] as! Int)
            case "resumed": resumed = frame
            default: Issue.record("unexpected frame \(frame)")
            }
        }
        #expect(seen[oak] == Array(6...Int(lastSeq[0])))
        #expect(seen[ash] == Array(1...Int(lastSeq[1])))
        await api.stop()
    }

    @Test func clientsThatDropAndResumeAtRandomCursorsUnderLoadEndWithEveryEventOnceInOrder() async throws {
        let api = try APIFixture(stream: true)
        let owner = try await api.person(email: "kai@example.org")
        let groups = [try await group(api, owner, "North"), try await group(api, owner, "South")]
        let (port, token) = (api.test.port, owner.token)
        // Three writers post to both groups throughout.
        let writers = (0..<3).map { writer in
            Task {
                let client = try APIFixture.Client(port: port)
                for index in 0..<30 {
                    let (status, _) = try await client.call("POST", "/v1/groups/\(groups[index % 2])/messages",
                                                            ["client_msg_id": "w\(writer)-\(index)", "text": "w\(writer) \(index)", "kind": "chat"],
                                                            token: token)
                    #expect(status == 201)
                }
            }
        }
        // Three clients, each on up to five connections: every connection resumes each group from
        // a random cursor at or before what the client has seen, reads a random number of
        // frames, and drops. Per connection, each group's events must run on from its cursor by one.
        let readers = (0..<3).map { reader in
            Task { () -> [String: Int] in
                var seen = Dictionary(uniqueKeysWithValues: groups.map { ($0, 0) })
                var generator = SystemRandomNumberGenerator()
                for round in 0..<5 {
                    let client = try await WebSocketTestClient.connect(port: port, path: "/v1/stream", token: token)
                    _ = await client.receiveJSON()
                    var expected = seen.mapValues { $0 == 0 ? 0 : Int.random(in: max(0, $0 - 5)...$0, using: &generator) }
                    let cursors = expected.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",")
                    client.sendText("{\"type\":\"resume\",\"cursors\":{\(cursors)}}")
                    let frames = round == 4 ? Int.max : Int.random(in: 1...40, using: &generator)
                    var read = 0
                    var resumed = false
                    while read < frames || !resumed {
                        guard let frame = await client.receiveJSON() else { break }
                        read += 1
                        if frame["type"] as? String == "resumed" {
                            resumed = true
                            if round == 4 { break }
                            // Live events come only while the writers post: once they stop, the
                            // stream falls quiet, and a second of quiet ends this connection.
                            client.client.setTimeout(seconds: 1)
                            continue
                        }
                        guard let group = frame["group_id"] as? String, let seq = frame["seq"] as? Int else { continue }
                        #expect(seq == expected[group]! + 1, "reader \(reader) round \(round): \(seq) after \(expected[group]!)")
                        expected[group] = seq
                        seen[group] = max(seen[group]!, seq)
                    }
                }
                return seen
            }
        }
        for writer in writers { try await writer.value }
        let last = try await api.inTenant { _, connection in
            try Dictionary(uniqueKeysWithValues: groups.map { ($0, Int(try GroupStore().group(id: UUID(uuidString: $0)!, on: connection)!.lastSeq)) })
        }
        for reader in readers {
            var seen = try await reader.value
            // The last connection resumed after every writer may still have been posting: catch up now.
            let client = try await WebSocketTestClient.connect(port: port, path: "/v1/stream", token: token)
            _ = await client.receiveJSON()
            client.sendText("{\"type\":\"resume\",\"cursors\":{\(seen.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ","))}}")
            var expected = seen
            while let frame = await client.receiveJSON(), frame["type"] as? String != "resumed" {
                guard let group = frame["group_id"] as? String, let seq = frame["seq"] as? Int else { continue }
                #expect(seq == expected[group]! + 1)
                expected[group] = seq
                seen[group] = seq
            }
            #expect(seen == last)
        }
        await api.stop()
    }

    @Test func aCursorFarBehindIsReplayedPageByPageInOrder() async throws {
        let api = try APIFixture(stream: true)
        let owner = try await api.person(email: "lou@example.org")
        let group = try await group(api, owner, "Backlog")
        // More than two replay pages behind.
        let total = FanoutState<Int>().replayPageSize * 2 + 50
        try await api.inTenant { tenant, connection in
            for index in 0..<total {
                _ = try MessageStore().post(tenant: tenant, group: UUID(uuidString: group)!, authorType: .user, authorID: UUID(uuidString: owner.id),
                                            authorName: "lou", message: NewMessage(clientMessageID: "b\(index)", text: "backlog \(index)", kind: .chat,
                                                                                  severity: nil, template: nil, location: nil, replyTo: nil), on: connection)
            }
        }
        let (client, _) = try await stream(api, owner, live: false)
        client.sendText(#"{"type":"resume","cursors":{"\#(group)":1}}"#)
        var seen: [Int] = []
        while let frame = await client.receiveJSON(), frame["type"] as? String != "resumed" {
            if let seq = frame["seq"] as? Int { seen.append(seq) }
        }
        #expect(seen == Array(2...(total + 1)))
        await api.stop()
    }

    @Test func aRemovedMemberGetsANoticeAndNoMoreOfTheGroup() async throws {
        let api = try APIFixture(stream: true)
        let owner = try await api.person(email: "cy@example.org")
        let member = try await api.person(email: "di@example.org")
        let pine = try await group(api, owner, "Pine")
        let yew = try await group(api, owner, "Yew")
        try await api.addMember(member.id, to: pine, role: "member")
        try await api.addMember(member.id, to: yew, role: "member")
        let (ownerStream, _) = try await stream(api, owner)
        let (memberStream, ready) = try await stream(api, member)
        #expect((ready["groups"] as? [[String: Any]])?.count == 2)

        #expect(try await api.call("DELETE", "/v1/groups/\(pine)/members/\(member.id)", token: owner.token).0 == 204)
        let notice = try await next(memberStream, "notice")
        #expect(notice["event"] as? String == "group.removed")
        #expect((notice["data"] as? [String: Any])?["group_id"] as? String == pine)
        #expect(try await next(ownerStream)["event"] as? String == "member.removed")
        // A post to the old group reaches the owner; the member's next frame is the other group's.
        let after = try await post(api, pine, "members only", as: owner)
        #expect(try await next(ownerStream)["seq"] as? Int == after)
        _ = try await post(api, yew, "still here", as: owner)
        let next = try await next(memberStream)
        #expect(next["group_id"] as? String == yew)
        // A deleted group is removed from every member's stream too.
        #expect(try await api.call("DELETE", "/v1/groups/\(yew)", token: owner.token).0 == 204)
        let deleted = try await self.next(memberStream, "notice")
        #expect((deleted["data"] as? [String: Any])?["group_id"] as? String == yew)
        #expect((deleted["data"] as? [String: Any])?["reason"] as? String == "deleted")
        // Nor can the member resume the old group.
        memberStream.sendText(#"{"type":"resume","cursors":{"\#(pine)":0}}"#)
        let error = try await self.next(memberStream, "error")
        #expect(error["code"] as? String == "not_found")
        await api.stop()
    }

    @Test func anInviteeWithThatVerifiedAddressHearsOfTheInvitationAtOnce() async throws {
        let api = try APIFixture(stream: true)
        let owner = try await api.person(email: "gil@example.org")
        let verified = try await api.person(email: "hal@example.org")
        let unverified = try await api.person(email: "ivy@example.org")
        try await api.inTenant { _, connection in try connection.query("UPDATE users SET email_verified = true WHERE email = 'hal@example.org'") }
        let oak = try await group(api, owner, "Oak")
        let (verifiedStream, _) = try await stream(api, verified)
        let (unverifiedStream, _) = try await stream(api, unverified)

        #expect(try await api.call("POST", "/v1/groups/\(oak)/invitations", ["email": "ivy@example.org"], token: owner.token).0 == 201)
        let (status, invitation) = try await api.call("POST", "/v1/groups/\(oak)/invitations", ["email": "hal@example.org"], token: owner.token)
        #expect(status == 201)
        let notice = try await next(verifiedStream, "notice")
        #expect(notice["event"] as? String == "invitation.received")
        let data = try #require(notice["data"] as? [String: Any])
        #expect(data["id"] as? String == invitation["id"] as? String)
        #expect(data["group_id"] as? String == oak && data["group_name"] as? String == "Oak")
        #expect(data["role"] as? String == "member" && data["status"] as? String == "pending")
        #expect(data["token"] == nil)  // the token goes only to the address itself
        // An address nobody has verified proves nothing: its account hears nothing (its next
        // frame is the answer to a later request, not a notice).
        unverifiedStream.sendText(#"{"type":"resume","cursors":{"\#(UUID().uuidString.lowercased())":0}}"#)
        #expect(try await next(unverifiedStream, "error")["code"] as? String == "not_found")
        await api.stop()
    }

    @Test func aNewMemberReceivesTheGroupLiveFromJoining() async throws {
        let api = try APIFixture(stream: true)
        let owner = try await api.person(email: "ed@example.org")
        let newcomer = try await api.person(email: "fay@example.org")
        let fir = try await group(api, owner, "Fir")
        let (stream, ready) = try await stream(api, newcomer)
        #expect((ready["groups"] as? [Any])?.isEmpty == true)
        let invitation = try #require(try await api.call("POST", "/v1/groups/\(fir)/invitations", ["email": "fay@example.org"],
                                                         token: owner.token).1["id"] as? String)
        let token = try await api.inTenant { _, connection in
            try connection.query("SELECT data->>'token' AS token FROM outbox WHERE data->>'invitation_id' = \(invitation)").rows[0].decode(String.self, "token")
        }
        #expect(try await api.call("POST", "/v1/invitations/accept", ["token": token], token: newcomer.token).0 == 200)
        let joined = try await next(stream)
        #expect(joined["event"] as? String == "member.joined" && joined["group_id"] as? String == fir)
        let seq = try await post(api, fir, "Welcome, Fay", as: owner)
        #expect(try await next(stream)["seq"] as? Int == seq)
        await api.stop()
    }

    @Test func logoutAndAccountDeletionCloseStreamsWith1008() async throws {
        let api = try APIFixture(stream: true)
        let gus = try await api.person(email: "gus@example.org")
        let (first, _) = try await stream(api, gus)
        #expect(try await api.call("POST", "/v1/auth/logout", token: gus.token).0 == 204)
        #expect(await first.receiveClose() == .some(.policyViolation))

        let hal = try await api.person(email: "hal@example.org")
        let (second, _) = try await stream(api, hal)
        #expect(try await api.call("DELETE", "/v1/me", ["password": "a long enough password"], token: hal.token).0 == 204)
        #expect(await second.receiveClose() == .some(.policyViolation))
        await api.stop()
    }

    @Test func badFramesGetAnErrorAndTheStreamStaysOpen() async throws {
        let api = try APIFixture(stream: true)
        let ivy = try await api.person(email: "ivy@example.org")
        let elm = try await group(api, ivy, "Elm")
        // A browser's ?access_token= works as well as the header.
        let client = try await WebSocketTestClient.connect(port: api.test.port, path: "/v1/stream?access_token=\(ivy.token)")
        #expect(try await next(client, "ready")["user_id"] as? String == ivy.id)
        for bad in ["not json", "[1,2]", #"{"type":"subscribe"}"#, #"{"type":"resume"}"#, #"{"type":"resume","cursors":{"x":1}}"#,
                    #"{"type":"resume","cursors":{"\#(elm)":-1}}"#, #"{"type":"resume","cursors":{"\#(elm)":"1"}}"#] {
            client.sendText(bad)
            let error = try await next(client, "error")
            #expect(error["code"] is String && error["message"] is String, "\(bad)")
        }
        // A group that is not the user's: an error naming it, and a resume of nothing.
        let stranger = UUID().uuidString.lowercased()
        client.sendText(#"{"type":"resume","cursors":{"\#(stranger)":0}}"#)
        #expect((try await next(client, "error")["message"] as? String)?.contains(stranger) == true)
        #expect((try await next(client, "resumed")["groups"] as? [Any])?.isEmpty == true)
        client.sendText(#"{"type":"resume","cursors":{"\#(elm)":0}}"#)
        #expect(try await next(client)["seq"] as? Int == 1)
        #expect(try await next(client, "resumed")["groups"] as? [[String: Any]] != nil)
        // No token, a forged token: the upgrade is refused with 401.
        for path in ["/v1/stream", "/v1/stream?access_token=rst_forged"] {
            let raw = try TestClient(port: api.test.port)
            raw.send("GET \(path) HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            #expect(await raw.readResponse()?.status == 401)
        }
        await api.stop()
    }
}
