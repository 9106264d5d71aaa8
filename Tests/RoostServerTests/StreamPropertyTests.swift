import Foundation
import RoostFanout
import RoostPersistence
import RoostProtocol
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Synchronization
import Testing

/// The stream's promises under random interleavings, over real sockets and the real database on
/// two nodes (each with its own hub and LISTEN connection): posts on either node, resumes sent
/// several at a time, the member removed and invited back. No event of a group reaches a
/// connection between its `group.removed` notice and the member's own `member.joined`, and every
/// event a member should get arrives in order, with no gap.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct StreamPropertyTests {
    /// A second node beside the fixture's: the same database, a hub and a LISTEN connection of its own.
    final class Node {
        let test: TestServer
        let hub: StreamHub
        let listener: FanoutListener

        init(pool: ConnectionPool) throws {
            let routes = AccountRoutes(pool: pool, hasher: PasswordHasher(parameters: .init(logN: 10, r: 8, p: 1)), sessionLifetime: 3600,
                                       hashingThreads: 1, limits: .generous)
            let hub = StreamHub.make(pool: pool, queueLimit: NetworkLimits().maxOutboundQueueBytes)
            test = try TestServer(extraRoutes: { builder in
                APIRoutes(accounts: routes, checkinMinimumSeconds: 1, hub: hub).add(to: &builder)
            })
            self.hub = hub
            listener = FanoutListener(configuration: TestDatabase.configuration(), server: test.server, log: Log(level: .error))
            try hub.listen(to: listener)
        }

        func stop() async {
            listener.stop()
            await test.stop()
        }
    }

    /// What one connection saw, checked frame by frame as a client that drops repeats would.
    final class Observer: Sendable {
        struct State {
            var last: [String: Int] = [:]
            var violations: [String] = []
            var events = 0
            var repeats = 0
        }

        let me: String
        let state = Mutex(State())

        init(me: String, ready: [String: Any]) {
            self.me = me
            let groups = (ready["groups"] as? [[String: Any]]) ?? []
            state.withLock { state in
                for group in groups { state.last[group["id"] as! String] = group["last_seq"] as? Int }
            }
        }

        func see(_ frame: [String: Any]) {
            state.withLock { state in
                switch frame["type"] as? String {
                case "event":
                    let group = frame["group_id"] as? String ?? "?"
                    let seq = frame["seq"] as? Int ?? -1
                    state.events += 1
                    let ownJoin = frame["event"] as? String == "member.joined" && (frame["data"] as? [String: Any])?["user_id"] as? String == me
                    guard let last = state.last[group] else {
                        if ownJoin { state.last[group] = seq } else { state.violations.append("\(seq) of \(group) while out of it") }
                        return
                    }
                    if seq <= last {
                        state.repeats += 1
                    } else if seq == last + 1 || ownJoin {
                        state.last[group] = seq
                    } else {
                        state.violations.append("gap \(last) → \(seq) in \(group)")
                    }
                case "notice" where frame["event"] as? String == "group.removed":
                    if let group = (frame["data"] as? [String: Any])?["group_id"] as? String { state.last[group] = nil }
                default:
                    break
                }
            }
        }

        var cursors: String {
            state.withLock { state in
                "{" + state.last.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
            }
        }
    }

    @Test(arguments: [11, 29, 47]) func randomPostsResumesRemovalsAndRejoinsAcrossTwoNodes(seed: Int) async throws {
        let api = try APIFixture(stream: true)
        let other = try Node(pool: api.pool)
        let owner = try await api.person(email: "owner\(seed)@example.org")
        let member = try await api.person(email: "member\(seed)@example.org")
        try await api.inTenant { _, connection in
            try connection.query("UPDATE users SET email_verified = true WHERE id = \(UUID(uuidString: member.id)!)")
        }
        var groups: [String] = []
        for name in ["North", "South"] {
            let group = try #require(try await api.call("POST", "/v1/groups", ["name": name], token: owner.token).1["id"] as? String)
            try await api.addMember(member.id, to: group, role: "member")
            groups.append(group)
        }
        let ports = [api.test.port, other.test.port]
        let clients = try ports.map { try APIClient(port: $0) }

        // Two streams of the member, one on each node, read all along by tasks of their own.
        var streams: [(WebSocketTestClient, Observer)] = []
        for port in ports {
            let stream = try await WebSocketTestClient.connect(port: port, path: "/v1/stream", token: member.token)
            let ready = try #require(await stream.receiveJSON())
            streams.append((stream, Observer(me: member.id, ready: ready)))
        }
        let readers = streams.map { stream, observer in
            Task { while let frame = await stream.receiveJSON() { observer.see(frame) } }
        }

        var random = SeededGenerator(seed: UInt64(seed))
        var isMember = [true, true]
        var (removals, rejoins, resumes) = (0, 0, 0)
        for step in 0..<80 {
            let index = Int(random.next() % 2)
            let group = groups[index]
            let client = clients[Int(random.next() % 2)]
            switch random.next() % 8 {
            case 0, 1, 2:
                let (status, body) = try await client.call("POST", "/v1/groups/\(group)/messages",
                                                           ["client_msg_id": "s\(seed)-\(step)", "text": "step \(step)", "kind": "chat"],
                                                           token: owner.token)
                #expect(status == 201, "\(body)")
            case 3:
                // Several resumes at once, each with the client's cursors as they are.
                for (stream, observer) in streams where random.next() % 2 == 0 {
                    for _ in 0..<(1 + Int(random.next() % 3)) {
                        stream.sendText(#"{"type":"resume","cursors":\#(observer.cursors)}"#)
                        resumes += 1
                    }
                }
            case 4:
                if isMember[index] {
                    #expect(try await client.call("DELETE", "/v1/groups/\(group)/members/\(member.id)", token: owner.token).0 == 204)
                    isMember[index] = false
                    removals += 1
                } else {
                    let (_, invitation) = try await client.call("POST", "/v1/groups/\(group)/invitations", ["email": "member\(seed)@example.org"],
                                                                token: owner.token)
                    let id = try #require(invitation["id"] as? String, "\(invitation)")
                    #expect(try await client.call("POST", "/v1/invitations/accept", ["invitation_id": id], token: member.token).0 == 200)
                    isMember[index] = true
                    rejoins += 1
                }
            default:
                // The member posts too, where they may.
                if isMember[index] {
                    #expect(try await client.call("POST", "/v1/groups/\(group)/messages",
                                                  ["client_msg_id": "m\(seed)-\(step)", "text": "member \(step)", "kind": "chat"],
                                                  token: member.token).0 == 201)
                }
            }
        }
        // Quiescence: each stream ends at the last seq of every group the member is in.
        let ids = groups
        let last = try await api.inTenant { _, connection in
            try ids.map { Int(try GroupStore().group(id: UUID(uuidString: $0)!, on: connection)!.lastSeq) }
        }
        for (stream, observer) in streams {
            stream.sendText(#"{"type":"resume","cursors":\#(observer.cursors)}"#)
        }
        func settled() -> Bool {
            streams.allSatisfy { _, observer in
                observer.state.withLock { state in (0..<2).allSatisfy { !isMember[$0] || state.last[groups[$0]] == last[$0] } }
            }
        }
        #expect(try await Poll.until(within: .seconds(120)) { settled() }, "streams did not reach \(last): \(streams.map { $0.1.cursors })")
        print("stream property (seed \(seed)): \(removals) removals, \(rejoins) re-joins, \(resumes) resumes; events seen "
              + streams.map { stream in stream.1.state.withLock { "\($0.events) (\($0.repeats) repeats)" } }.joined(separator: " and "))
        for (index, (_, observer)) in streams.enumerated() {
            let state = observer.state.withLock { $0 }
            #expect(state.violations.isEmpty, "node \(index): \(state.violations.prefix(5))")
            #expect(state.events > 0)
            for group in 0..<2 where !isMember[group] { #expect(state.last[groups[group]] == nil) }
        }
        // Stopping the servers closes the streams, which ends the readers.
        await other.stop()
        await api.stop()
        for reader in readers { await reader.value }
    }
}
