import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The stream across real `roost serve` processes on one database: fanout between nodes
/// through LISTEN/NOTIFY, and a node killed mid-load losing nothing that was acknowledged.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"), .serialized)
struct StreamNodesTests {
    struct Person {
        let token: String
        let id: String
    }

    static func tenant() throws -> String {
        let slug = "nodes-\(UUID().uuidString.prefix(8).lowercased())"
        _ = try TenantStore().create(slug: slug, name: "Nodes", registration: .open, on: TestDatabase.migratedConnection())
        return slug
    }

    static func person(_ client: APIClient, tenant: String, _ email: String) async throws -> Person {
        let (status, body) = try await client.call("POST", "/v1/auth/register", [
            "tenant": tenant, "email": email, "password": "a long enough password", "display_name": email,
        ])
        #expect(status == 201, "\(body)")
        return Person(token: try #require(body["token"] as? String), id: try #require((body["user"] as? [String: Any])?["id"] as? String))
    }

    /// Reads events of `group` until `through`, failing on a gap or a duplicate; the seqs seen.
    static func collect(_ stream: WebSocketTestClient, group: String, after: Int, through: Int) async -> [Int] {
        var seen: [Int] = []
        var last = after
        while last < through, let frame = await stream.receiveJSON() {
            guard frame["type"] as? String == "event", frame["group_id"] as? String == group, let seq = frame["seq"] as? Int else { continue }
            seen.append(seq)
            last = seq
        }
        return seen
    }

    @Test func whatIsPostedOnOneNodeReachesStreamsOnTheOtherAndMembershipChangesFollow() async throws {
        let slug = try Self.tenant()
        let a = try await ServeProcess()
        let b = try await ServeProcess()
        let onA = try APIClient(port: a.port)
        let owner = try await Self.person(onA, tenant: slug, "owner@example.org")
        let member = try await Self.person(onA, tenant: slug, "member@example.org")
        let group = try #require(try await onA.call("POST", "/v1/groups", ["name": "Two Nodes"], token: owner.token).1["id"] as? String)
        let invitation = try #require(try await onA.call("POST", "/v1/groups/\(group)/invitations", ["email": "member@example.org"],
                                                         token: owner.token).1["id"] as? String)
        let setup = try TestDatabase.migratedConnection()
        let tenant = try #require(try TenantStore().find(slug: slug, on: setup)).id
        let token = try setup.withTenantTransaction(tenant) {
            try $0.query("SELECT data->>'token' AS token FROM outbox WHERE data->>'invitation_id' = \(invitation)").rows[0].decode(String.self, "token")
        }
        #expect(try await onA.call("POST", "/v1/invitations/accept", ["token": token], token: member.token).0 == 200)

        // This client never sends a frame: live delivery starts by itself shortly after `ready`.
        let stream = try await WebSocketTestClient.connect(port: b.port, path: "/v1/stream", token: member.token)
        #expect(await stream.receiveJSON()?["type"] as? String == "ready")
        var posted: [Int] = []
        for index in 0..<20 {
            let (status, message) = try await onA.call("POST", "/v1/groups/\(group)/messages",
                                                       ["client_msg_id": "n\(index)", "text": "from A \(index)", "kind": "chat"], token: owner.token)
            #expect(status == 201)
            posted.append(try #require(message["seq"] as? Int))
        }
        #expect(await Self.collect(stream, group: group, after: 2, through: posted.last!) == posted)

        // Removal on node A stops the group on node B at once, with a notice.
        #expect(try await onA.call("DELETE", "/v1/groups/\(group)/members/\(member.id)", token: owner.token).0 == 204)
        let notice = await stream.receiveJSON()
        #expect(notice?["type"] as? String == "notice" && notice?["event"] as? String == "group.removed")
        // Logout on node A closes the stream on node B with 1008.
        #expect(try await onA.call("POST", "/v1/auth/logout", token: member.token).0 == 204)
        #expect(await stream.receiveClose() == .some(.policyViolation))
        for node in [a, b] {
            node.process.signal(SIGTERM)
            #expect(await node.process.wait() == 0)
        }
    }

    @Test func aNodeKilledMidLoadLosesNothingAcknowledgedAndItsClientsResumeOnTheOther() async throws {
        let slug = try Self.tenant()
        let a = try await ServeProcess()
        let b = try await ServeProcess()
        let onA = try APIClient(port: a.port)
        let owner = try await Self.person(onA, tenant: slug, "writer@example.org")
        let group = try #require(try await onA.call("POST", "/v1/groups", ["name": "Crash"], token: owner.token).1["id"] as? String)
        let onStreamA = try await WebSocketTestClient.connect(port: a.port, path: "/v1/stream", token: owner.token)
        let onStreamB = try await WebSocketTestClient.connect(port: b.port, path: "/v1/stream", token: owner.token)
        for stream in [onStreamA, onStreamB] {
            #expect(await stream.receiveJSON()?["type"] as? String == "ready")
            stream.sendText(#"{"type":"resume","cursors":{}}"#)  // live at once
        }

        // The writer posts to A, and after A dies retries the same client_msg_id on B (idempotent).
        let (portA, portB, token) = (a.port, b.port, owner.token)
        let writer = Task { () -> [Int] in
            var client = try APIClient(port: portA)
            var onB = false
            var acknowledged: [Int] = []
            let deadline = ContinuousClock.now + .seconds(60)
            for index in 0..<80 {
                while true {
                    guard ContinuousClock.now < deadline else { throw TestClientError("no node took the posts within 60 s") }
                    do {
                        let (status, message) = try await client.call("POST", "/v1/groups/\(group)/messages",
                                                                      ["client_msg_id": "k\(index)", "text": "load \(index)", "kind": "chat"], token: token)
                        if (status == 201 || status == 200), let seq = message["seq"] as? Int {
                            acknowledged.append(seq)
                            break
                        }
                    } catch {}
                    guard !onB else { continue }
                    onB = true
                    client = try APIClient(port: portB)
                }
            }
            return acknowledged
        }
        // Kill A once the stream on it has seen a few events.
        var seenOnA: [Int] = []
        while seenOnA.count < 10, let frame = await onStreamA.receiveJSON() {
            if frame["type"] as? String == "event", let seq = frame["seq"] as? Int { seenOnA.append(seq) }
        }
        a.process.signal(SIGKILL)
        _ = await a.process.wait()
        // A's client reads what A had sent, then resumes on B from the last seq it saw.
        while let frame = await onStreamA.receiveJSON() {
            if frame["type"] as? String == "event", let seq = frame["seq"] as? Int { seenOnA.append(seq) }
        }
        let acknowledged = try await writer.value
        #expect(acknowledged.count == 80)
        let last = try #require(acknowledged.max())
        let resumed = try await WebSocketTestClient.connect(port: b.port, path: "/v1/stream", token: owner.token)
        #expect(await resumed.receiveJSON()?["type"] as? String == "ready")
        let cursor = seenOnA.last ?? 1
        resumed.sendText(#"{"type":"resume","cursors":{"\#(group)":\#(cursor)}}"#)
        let afterResume = await Self.collect(resumed, group: group, after: cursor, through: last)
        let killedSide = seenOnA + afterResume
        let survivingSide = await Self.collect(onStreamB, group: group, after: 1, through: last)
        // Each client: every seq from 2 to the last, once, in order; so every acknowledged post.
        #expect(killedSide == Array(2...last), "client of the killed node: \(killedSide.count) events")
        #expect(survivingSide == Array(2...last), "client of the surviving node: \(survivingSide.count) events")
        #expect(Set(acknowledged).isSubset(of: Set(killedSide)) && Set(acknowledged).isSubset(of: Set(survivingSide)))
        b.process.signal(SIGTERM)
        #expect(await b.process.wait() == 0)
    }
}
