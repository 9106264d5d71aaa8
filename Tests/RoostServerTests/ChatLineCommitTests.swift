import Foundation
import Synchronization
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// Group commit for chat lines (`ChatLineCommits`, `MessageStore.postChatLines`): lines that
/// arrive while a commit is on its way share the next, each answered after it; a line the shared
/// statement cannot post is declined to the usual path; a statement that fails writes nothing.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct ChatLineCommitTests {
    /// Two groups, three people: ann and ben in Elm Street, ben alone in Oak Road, cy in neither.
    struct Streets {
        let api: APIFixture
        let ann: APIFixture.Person, ben: APIFixture.Person, cy: APIFixture.Person
        let elm: String, oak: String

        init() async throws {
            api = try APIFixture()
            ann = try await api.person(email: "ann@example.org")
            ben = try await api.person(email: "ben@example.org")
            cy = try await api.person(email: "cy@example.org")
            elm = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm Street"], token: ann.token).1["id"] as? String)
            oak = try #require(try await api.call("POST", "/v1/groups", ["name": "Oak Road"], token: ben.token).1["id"] as? String)
            try await api.addMember(ben.id, to: elm, role: "member")
        }

        func line(_ person: APIFixture.Person, _ group: String, _ clientID: String, _ text: String, location: String? = nil) throws -> ChatLine {
            let token = try #require(TenantToken(person.token))
            return ChatLine(tenant: token.tenant, group: UUID(uuidString: group)!, user: UUID(uuidString: person.id)!, tokenHash: token.hash,
                            clientMessageID: clientID, text: text, location: location)
        }

        /// The group's messages as `(seq, author id, text, transaction id)`, oldest first.
        func messages(_ group: String) async throws -> [(seq: Int64, author: String, text: String, xmin: String)] {
            try await api.inTenant { _, connection in
                try connection.query("""
                    SELECT m.seq, m.author_id::text AS author, m.text, e.xmin::text AS xmin
                    FROM messages m JOIN group_events e ON e.group_id = m.group_id AND e.seq = m.seq
                    WHERE m.group_id = \(UUID(uuidString: group)!) ORDER BY m.seq
                    """).rows.map {
                    (try $0.decode(Int64.self, "seq"), try $0.decode(String.self, "author"), try $0.decode(String.self, "text"),
                     try $0.decode(String.self, "xmin"))
                }
            }
        }
    }

    /// Between two looks at `pg_stat_activity`, which says when a backend starts waiting on a
    /// lock and offers nothing to await: a spin would hold one of the two threads of this
    /// machine's cooperative pool, and slow every test running beside it, while it waits.
    static func pause() async throws { try await Task.sleep(for: .milliseconds(2)) }

    /// A pool of one connection whose time stands still: a test holds it to line posts up.
    func onePool() -> ConnectionPool {
        ConnectionPool(configuration: TestDatabase.configuration(applicationName: "roost-chat-lines"),
                       options: .init(maxConnections: 1, acquireTimeout: .seconds(1), clock: ManualPoolClock()))
    }

    @Test func linesThatArriveWhileACommitIsOnItsWayShareTheNextAndEachIsAnsweredAfterIt() async throws {
        let streets = try await Streets()
        let pool = onePool()
        defer { pool.close() }
        let (counts, queued) = AsyncStream.makeStream(of: Int.self)
        let commits = ChatLineCommits(pool: pool, sessionLifetime: 3600, sessionMaxAge: 86_400, queued: { queued.yield($0) })
        // The pool's one connection is held, so every line waits for the same commit.
        let (held, release) = (Latch(), DispatchSemaphore(value: 0))
        let holder = Task {
            try await pool.withConnection { _ in
                held.raise()
                release.wait()
            }
        }
        await held.wait()

        let lines = [
            try streets.line(streets.ann, streets.elm, "a1", "Bins are out"),
            try streets.line(streets.ben, streets.oak, "b1", "Oak Road's lamp is out"),
            try streets.line(streets.ann, streets.elm, "a2", "and the recycling"),
            try streets.line(streets.cy, streets.elm, "c1", "not a member"),  // declined: no member of Elm Street
            try streets.line(streets.ann, streets.elm, "a1", "a repeat"),  // declined: a repeat of a1
            try streets.line(streets.ben, streets.elm, "b2", "Thanks, \"Ann\" \\ \u{1F600}"),
            try streets.line(streets.ben, streets.oak, "b3", "fixed", location: "{\"lat\":51.5,\"lon\":-0.12,\"accuracy_m\":10}"),
            // The token names ben, the line claims ann: declined (the usual path checks the session).
            ChatLine(tenant: try #require(TenantToken(streets.ben.token)).tenant, group: UUID(uuidString: streets.elm)!,
                     user: UUID(uuidString: streets.ann.id)!, tokenHash: try #require(TenantToken(streets.ben.token)).hash,
                     clientMessageID: "x1", text: "not ann", location: nil),
        ]
        var posts: [Task<ChatLineOutcome, any Error>] = []
        var queue = counts.makeAsyncIterator()
        for (index, line) in lines.enumerated() {
            posts.append(Task { try await commits.post(line) })
            // Queued before the next is sent, so the commit takes them in this order.
            #expect(await queue.next() == index + 1)
        }
        release.signal()
        _ = try await holder.value
        var outcomes: [ChatLineOutcome] = []
        for post in posts { outcomes.append(try await post.value) }

        let declined = outcomes.enumerated().filter { $0.element == .declined }.map(\.offset)
        #expect(declined == [3, 4, 7])
        func seq(_ index: Int) -> Int64? {
            if case .posted(let seq, _) = outcomes[index] { return seq }
            return nil
        }
        // Each group's seqs follow arrival, gapless (after the events of making the group).
        let (elmFirst, oakFirst) = (try #require(seq(0)), try #require(seq(1)))
        #expect([seq(2), seq(5)] == [elmFirst + 1, elmFirst + 2])
        #expect(seq(6) == oakFirst + 1)
        // The answer is the message as the API shows it, with the author's name from the database.
        if case .posted(_, let json) = outcomes[5] {
            let message = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            #expect(message["text"] as? String == "Thanks, \"Ann\" \\ \u{1F600}")
            #expect((message["author"] as? [String: Any])?["display_name"] as? String == "ben")
            #expect((message["author"] as? [String: Any])?["id"] as? String == streets.ben.id)
            #expect(message["client_msg_id"] as? String == "b2" && message["kind"] as? String == "chat")
        }

        let elm = try await streets.messages(streets.elm)
        let oak = try await streets.messages(streets.oak)
        #expect(elm.map(\.text) == ["Bins are out", "and the recycling", "Thanks, \"Ann\" \\ \u{1F600}"])
        #expect(elm.map(\.author) == [streets.ann.id, streets.ann.id, streets.ben.id])
        #expect(oak.map(\.text) == ["Oak Road's lamp is out", "fixed"])
        // One transaction wrote all five: one commit, one WAL flush.
        #expect(Set((elm + oak).map(\.xmin)).count == 1)

        // Read back through the API, the lines are ordinary messages.
        let (status, page) = try await streets.api.call("GET", "/v1/groups/\(streets.oak)/messages", token: streets.ben.token)
        let items = try #require(page["items"] as? [[String: Any]])
        #expect(status == 200 && items.count == 2 && (items[0]["location"] as? [String: Any])?["lat"] as? Double == 51.5)
        await streets.api.stop()
    }

    @Test func linesOfTwoTenantsShareACommitAndNoLineReachesTheOtherTenant() async throws {
        let (north, south) = (try await Streets(), try await Streets())
        let listener = try PostgresListener(TestDatabase.configuration(applicationName: "roost-chat-lines-listen"), channel: GroupEventLog.channel)
        let southTenant = try #require(TenantToken(south.ann.token)).tenant
        let lines = [
            try north.line(north.ann, north.elm, "n1", "North one"),
            try south.line(south.ann, south.elm, "s1", "South one"),
            try north.line(north.ben, north.elm, "n2", "North two"),
            // North's ann, in south's tenant and group: her session is not south's. Declined.
            ChatLine(tenant: southTenant, group: UUID(uuidString: south.elm)!, user: UUID(uuidString: north.ann.id)!,
                     tokenHash: try #require(TenantToken(north.ann.token)).hash, clientMessageID: "x1", text: "across", location: nil),
            // North's ann in her own tenant, naming south's group: no such group there. Declined.
            try north.line(north.ann, south.elm, "x2", "across"),
            try south.line(south.ben, south.oak, "s2", "South two"),
        ]
        let commit = try await north.api.pool.withConnection { connection in
            try MessageStore().postChatLines(lines, lifetime: 3600, maxAge: 86_400, on: connection)
        }
        #expect(commit.failure == nil)
        let posted = commit.outcomes.enumerated().compactMap { index, outcome -> (Int, Int64)? in
            if case .posted(let seq, _) = outcome { (index, seq) } else { nil }
        }
        #expect(posted.map(\.0) == [0, 1, 2, 5])
        #expect(try await north.messages(north.elm).map(\.text) == ["North one", "North two"])
        #expect(try await south.messages(south.elm).map(\.text) == ["South one"])
        #expect(try await south.messages(south.oak).map(\.text) == ["South two"])
        // One transaction for both tenants.
        let transactions = try await north.messages(north.elm).map(\.xmin) + south.messages(south.elm).map(\.xmin)
        #expect(Set(transactions).count == 1)

        // Each posted line's notice, with its frame, in the order of its group's seqs.
        let groups = Set([north.elm, south.elm, south.oak].compactMap(UUID.init(uuidString:)))
        var events: [NodeNotice.Event] = []
        var descriptor = pollfd(fd: listener.socket, events: Int16(POLLIN), revents: 0)
        while events.count < 4 {
            for payload in try listener.drain() {
                if case .event(let event)? = NodeNotice(payload: payload), groups.contains(event.group) { events.append(event) }
            }
            // Waits for the socket (the notices come as the commit ends), never for a time.
            if events.count < 4 { #expect(poll(&descriptor, 1, 120_000) == 1) }
        }
        let seqOf = Dictionary(posted.map { (lines[$0.0].group, $0.1) }, uniquingKeysWith: min)
        #expect(Set(events.map { "\($0.group)/\($0.seq)" }) == Set(posted.map { "\(lines[$0.0].group)/\($0.1)" }))
        for group in groups {
            let seqs = events.filter { $0.group == group }.map(\.seq)
            #expect(seqs == seqs.sorted() && seqs.first == seqOf[group])
        }
        #expect(events.allSatisfy { $0.frame?.contains("\"event\":\"message.created\"") == true })
        await north.api.stop()
        await south.api.stop()
    }

    @Test func aStatementThatFailsFailsItsCommitWritesNothingAndTheConnectionGoesOn() async throws {
        let streets = try await Streets()
        let good = try streets.line(streets.ann, streets.elm, "g1", "Good")
        // What no client can send (the route validates places): text the jsonb cast refuses.
        let bad = try streets.line(streets.ben, streets.oak, "x1", "Bad", location: "{not json")
        let commit = try await streets.api.pool.withConnection { connection in
            try MessageStore().postChatLines([good, bad], lifetime: 3600, maxAge: 86_400, on: connection)
        }
        #expect(commit.outcomes == [.declined, .declined])
        #expect(commit.failure != nil)
        #expect(try await streets.messages(streets.elm).isEmpty)
        #expect(try await streets.messages(streets.oak).isEmpty)
        let elm = UUID(uuidString: streets.elm)!
        let lastSeq = try await streets.api.inTenant { _, connection in
            try connection.query("SELECT last_seq FROM group_seqs WHERE group_id = \(elm)").rows[0].decode(Int64.self, "last_seq")
        }

        let again = try await streets.api.pool.withConnection { connection in
            try MessageStore().postChatLines([good], lifetime: 3600, maxAge: 86_400, on: connection)
        }
        #expect(again.failure == nil)
        if case .posted(let seq, _) = again.outcomes.first, seq == lastSeq + 1 {} else { Issue.record("the good line alone was not posted: \(again.outcomes)") }
        await streets.api.stop()
    }

    @Test func aRepeatCommittedWhileALineWaitedFailsItsCommitAndEveryLineInItIsDeclined() async throws {
        let streets = try await Streets()
        let name = "roost-chat-race-\(UUID().uuidString.prefix(8))"
        let pool = ConnectionPool(configuration: TestDatabase.configuration(applicationName: name),
                                  options: .init(maxConnections: 3, acquireTimeout: .seconds(1), clock: ManualPoolClock()))
        defer { pool.close() }
        let (tenant, elm, ann) = (try #require(TenantToken(streets.ann.token)).tenant, UUID(uuidString: streets.elm)!, UUID(uuidString: streets.ann.id)!)
        // The same line posted the usual way, its transaction holding ann's membership until told.
        let (holding, release) = (Latch(), DispatchSemaphore(value: 0))
        let usual = Task {
            try await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant) { connection in
                    try connection.query("SELECT 1 FROM memberships WHERE group_id = \(elm) AND user_id = \(ann) FOR UPDATE")
                    let message = NewMessage(clientMessageID: "a1", text: "first", kind: .chat, severity: nil, template: nil, location: nil, replyTo: nil)
                    _ = try MessageStore().post(tenant: tenant, group: elm, authorType: .user, authorID: ann, authorName: "Anna", message: message, on: connection)
                    holding.raise()
                    release.wait()
                }
            }
        }
        await holding.wait()
        let lines = [try streets.line(streets.ann, streets.elm, "a1", "again"), try streets.line(streets.ben, streets.oak, "b1", "Oak Road")]
        let done = Latch()
        let shared = Task {
            defer { done.raise() }
            return try await pool.withConnection { try MessageStore().postChatLines(lines, lifetime: 3600, maxAge: 86_400, on: $0) }
        }
        // The shared commit's gate waits for ann's membership; then the repeat commits. (Should it
        // not wait, the loop ends with it, and the expectations below say what it did instead.)
        while !done.isRaised, try await pool.withConnection({ connection in
            try connection.query("""
                SELECT count(*) AS waiting FROM pg_stat_activity WHERE application_name = \(name) AND wait_event_type = 'Lock'
                """).rows[0].decode(Int64.self, "waiting")
        }) == 0 { try await Self.pause() }
        release.signal()
        try await usual.value
        let commit = try await shared.value
        // Its snapshot did not see the repeat; the unique key did, and nothing of the commit stayed.
        #expect(commit.failure?.code == .uniqueViolation)
        #expect(commit.outcomes == [.declined, .declined])
        #expect(try await streets.messages(streets.elm).map(\.text) == ["first"])
        #expect(try await streets.messages(streets.oak).isEmpty)
        await streets.api.stop()
    }

    @Test func theRouteSharesCommitsOnlyForWhatItMayAndAnswersTheRestTheUsualWay() async throws {
        let streets = try await Streets()
        let path = "/v1/groups/\(streets.elm)/messages"
        // The first post of a session goes the usual way and teaches the node whose token it is;
        // the next ones share commits.
        var seqs: [Int] = []
        for index in 1...3 {
            let (status, body) = try await streets.api.call("POST", path, ["client_msg_id": "b\(index)", "text": "line \(index)", "kind": "chat"],
                                                            token: streets.ben.token)
            #expect(status == 201 && body["text"] as? String == "line \(index)")
            seqs.append(try #require(body["seq"] as? Int))
        }
        #expect(seqs == [seqs[0], seqs[0] + 1, seqs[0] + 2])
        // A repeat is answered with the first message (200), by the usual path.
        let (repeatStatus, repeated) = try await streets.api.call("POST", path, ["client_msg_id": "b2", "text": "again", "kind": "chat"],
                                                                  token: streets.ben.token)
        #expect(repeatStatus == 200 && repeated["seq"] as? Int == seqs[1] && repeated["text"] as? String == "line 2")
        // Muted: 403 muted; removed: 404; signed out: 401. The node still knows the token.
        #expect(try await streets.api.call("POST", "/v1/groups/\(streets.elm)/members/\(streets.ben.id)/mute", ["minutes": 10],
                                           token: streets.ann.token).0 == 200)
        let muted = try await streets.api.call("POST", path, ["client_msg_id": "b5", "text": "shh", "kind": "chat"], token: streets.ben.token)
        #expect(muted.0 == 403 && muted.1.errorCode == "muted")
        #expect(try await streets.api.call("DELETE", "/v1/groups/\(streets.elm)/members/\(streets.ben.id)", token: streets.ann.token).0 == 204)
        let removed = try await streets.api.call("POST", path, ["client_msg_id": "b6", "text": "hello?", "kind": "chat"], token: streets.ben.token)
        #expect(removed.0 == 404)
        #expect(try await streets.api.call("POST", "/v1/auth/logout", token: streets.ben.token).0 == 204)
        let ended = try await streets.api.call("POST", "/v1/groups/\(streets.oak)/messages", ["client_msg_id": "b7", "text": "hi", "kind": "chat"],
                                               token: streets.ben.token)
        #expect(ended.0 == 401)
        #expect(try await streets.messages(streets.elm).map(\.text) == ["line 1", "line 2", "line 3"])
        #expect(try await streets.messages(streets.oak).isEmpty)
        await streets.api.stop()
    }
}

/// A latch one task (or a body on a connection's queue) raises, and another awaits or reads.
private final class Latch: Sendable {
    private let state = Mutex<(raised: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func raise() {
        let waiters = state.withLock { state in
            state.raised = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var isRaised: Bool { state.withLock { $0.raised } }

    func wait() async {
        await withCheckedContinuation { waiter in
            let raised = state.withLock { state in
                if !state.raised { state.waiters.append(waiter) }
                return state.raised
            }
            if raised { waiter.resume() }
        }
    }
}
