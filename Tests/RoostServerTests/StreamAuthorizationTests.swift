import Foundation
import RoostFanout
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// The stream is authorized at every step (issue: hostile users): replays in flight stop at a
/// removal, and a client cannot queue resumes without bound.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct StreamAuthorizationTests {
    /// Posts `count` messages of about 3.9 KB straight through the store, in one transaction.
    func history(_ api: APIFixture, group: String, author: String, count: Int) async throws {
        let (group, author) = (UUID(uuidString: group)!, UUID(uuidString: author)!)
        try await api.inTenant { tenant, connection in
            let text = String(repeating: "history ", count: 490)
            for index in 0..<count {
                _ = try MessageStore().post(tenant: tenant, group: group, authorType: .user, authorID: author, authorName: "owner",
                                            message: NewMessage(clientMessageID: "h\(index)", text: text, kind: .chat, severity: nil,
                                                                template: nil, location: nil, replyTo: nil), on: connection)
            }
        }
    }

    @Test func aRemovedMemberWithResumesInFlightReceivesNothingPostedAfterTheRemoval() async throws {
        let api = try APIFixture(stream: true)
        let owner = try await api.person(email: "own@example.org")
        let member = try await api.person(email: "mem@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Long history"], token: owner.token).1["id"] as? String)
        try await api.addMember(member.id, to: group, role: "member")
        // About 4 MB of history: more than the replay queues before it waits for the client (half
        // the 1 MiB bound) plus what the kernel's buffers take, so the replays are still reading
        // pages when the removal lands (asserted below).
        let historyCount = 1000
        try await history(api, group: group, author: owner.id, count: historyCount)

        let stream = try await WebSocketTestClient.connect(port: api.test.port, path: "/v1/stream", receiveBuffer: 4096, token: member.token)
        #expect(await stream.receiveJSON()?["type"] as? String == "ready")
        for _ in 0..<3 { stream.sendText(#"{"type":"resume","cursors":{"\#(group)":0}}"#) }
        // The member does not read yet: the first replay fills the queue past half its 1 MiB bound
        // and waits for it to drain.
        #expect(try await Poll.until(every: .milliseconds(5)) { api.test.server.queuedBytes > 512 * 1024 })
        let (removed, _) = try await api.call("DELETE", "/v1/groups/\(group)/members/\(member.id)", token: owner.token)
        #expect(removed == 204)
        let removal = try await api.inTenant { _, connection in
            try GroupStore().group(id: UUID(uuidString: group)!, on: connection)!.lastSeq
        }
        for index in 0..<5 {
            let (status, _) = try await api.call("POST", "/v1/groups/\(group)/messages",
                                                 ["client_msg_id": "after-\(index)", "text": "posted after the removal", "kind": "chat"],
                                                 token: owner.token)
            #expect(status == 201)
        }

        // Now the member reads everything the server sends, until the stream goes quiet.
        var events: [Int] = []
        var removedNoticeAt: Int?
        var afterNotice = 0
        var resumed = 0
        while let frame = await stream.receiveJSON() {
            switch frame["type"] as? String {
            case "event":
                events.append(frame["seq"] as? Int ?? -1)
                if removedNoticeAt != nil { afterNotice += 1 }
                #expect((frame["data"] as? [String: Any])?["text"] as? String != "posted after the removal")
            case "notice" where frame["event"] as? String == "group.removed":
                removedNoticeAt = events.count
            case "resumed":
                resumed += 1
            default:
                break
            }
            // The replay in flight ends at the removal, and the one queued after it finds the group gone.
            if resumed == 2 && removedNoticeAt != nil { break }
        }
        #expect(removedNoticeAt != nil)
        #expect(events.allSatisfy { $0 < Int(removal) }, "an event at or after the removal (\(removal)) reached the removed member")
        #expect(afterNotice == 0, "\(afterNotice) events arrived after the group.removed notice")
        // The replay was cut short by the removal (so this test saw one in flight).
        #expect(Set(events).count < historyCount)
        // REST agrees: the group is gone for the member.
        #expect(try await api.call("GET", "/v1/groups/\(group)/events?after=0", token: member.token).0 == 404)
        await api.stop()
    }

    @Test func aClientSendingResumesFasterThanASaneRateIsToldThenClosed() async throws {
        let api = try APIFixture(stream: true)
        let person = try await api.person(email: "fast@example.org")
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Flood"], token: person.token).1["id"] as? String)
        let stream = try await WebSocketTestClient.connect(port: api.test.port, path: "/v1/stream", token: person.token)
        #expect(await stream.receiveJSON()?["type"] as? String == "ready")
        for _ in 0..<(FanoutState<Int>().resumeLimit + 5) { stream.sendText(#"{"type":"resume","cursors":{"\#(group)":0}}"#) }
        var error: [String: Any]?
        var resumed = 0
        while let frame = await stream.receiveJSON() {
            if frame["type"] as? String == "error" { error = frame; break }
            if frame["type"] as? String == "resumed" { resumed += 1 }
        }
        #expect(error?["code"] as? String == "rate_limited")
        #expect(await stream.receiveClose() == .some(.policyViolation))
        // Queued resumes were replaced by newer ones rather than all replayed.
        #expect(resumed < FanoutState<Int>().resumeLimit)
        await api.stop()
    }
}
