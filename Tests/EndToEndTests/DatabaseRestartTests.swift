import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// PostgreSQL restarted under load, on a cluster of the test's own: both nodes answer 503
/// meanwhile, recover by themselves, and every acknowledged message reaches every stream once.
@Suite(.enabled(if: TestDatabase.isConfigured && ScratchCluster.binDirectory != nil, "needs the test database and PostgreSQL's server binaries"))
struct DatabaseRestartTests {
    @Test func bothNodesAnswer503DuringARestartRecoverAndLoseNothing() async throws {
        let cluster = try await ScratchCluster()
        let admin = try PostgresConnection.connect(cluster.configuration)
        try admin.run(script: "CREATE ROLE roost LOGIN")
        try admin.run(script: "CREATE DATABASE roost OWNER roost")
        let url = "postgresql:///roost?host=\(cluster.directory)/run&port=\(cluster.port)&user=roost"
        let a = try await ServeProcess(["--no-outbox-worker"], databaseURL: url)
        let b = try await ServeProcess(["--no-outbox-worker"], databaseURL: url)
        let setup = try PostgresConnection.connect(ConnectionConfiguration(connectionString: url))
        _ = try TenantStore().create(slug: "restart", name: "Restart", registration: .open, on: setup)

        let onA = try APIClient(port: a.port)
        let (_, registered) = try await onA.call("POST", "/v1/auth/register", [
            "tenant": "restart", "email": "rita@example.org", "password": "a long enough password", "display_name": "Rita",
        ])
        let token = try #require(registered["token"] as? String)
        let group = try #require(try await onA.call("POST", "/v1/groups", ["name": "Restart"], token: token).1["id"] as? String)
        var streams: [(port: UInt16, client: WebSocketTestClient, seen: [Int])] = []
        for port in [a.port, b.port] {
            let client = try await WebSocketTestClient.connect(port: port, path: "/v1/stream", token: token)
            #expect(await client.receiveJSON()?["type"] as? String == "ready")
            client.sendText(#"{"type":"resume","cursors":{}}"#)  // live at once
            streams.append((port, client, []))
        }

        // Posts keep coming (each retried under its client_msg_id until acknowledged) while
        // PostgreSQL stops and starts again.
        let (portA, portB) = (a.port, b.port)
        let writer = Task { () -> (acknowledged: [Int], refused: Int) in
            let clients = [try APIClient(port: portA), try APIClient(port: portB)]
            var acknowledged: [Int] = []
            var refused = 0
            let deadline = ContinuousClock.now + .seconds(120)
            for index in 0..<60 {
                while true {
                    guard ContinuousClock.now < deadline else { throw TestClientError("the nodes did not recover within 120 s") }
                    let client = clients[index % 2]
                    let (status, message) = (try? await client.call("POST", "/v1/groups/\(group)/messages",
                                                                    ["client_msg_id": "r\(index)", "text": "load \(index)", "kind": "chat"],
                                                                    token: token)) ?? (0, [:])
                    if status == 201 || status == 200, let seq = message["seq"] as? Int {
                        acknowledged.append(seq)
                        break
                    }
                    #expect(status == 503 || status == 0, "status \(status) \(message)")
                    refused += 1
                    if status == 0 { try? clients[index % 2].reconnect() }
                    try? await Poll.quiet(for: .milliseconds(50))  // a client's pause before it tries again
                }
            }
            return (acknowledged, refused)
        }
        // Once some posts have reached a stream, restart PostgreSQL; both nodes say they are not ready meanwhile.
        while streams[0].seen.count < 5, let frame = await streams[0].client.receiveJSON() {
            if frame["type"] as? String == "event", let seq = frame["seq"] as? Int { streams[0].seen.append(seq) }
        }
        try await cluster.stop()
        for port in [a.port, b.port] {
            let ready = await offload { exchange(port, "GET /readyz HTTP/1.1\r\nConnection: close\r\n\r\n") }
            #expect(ready?.hasPrefix("HTTP/1.1 503") == true, "node on \(port) during the outage: \(ready ?? "no answer")")
        }
        try await Poll.quiet(for: .milliseconds(500))  // the outage lasts a moment while posts keep coming
        try await cluster.start()
        let (acknowledged, refused) = try await writer.value
        #expect(acknowledged.count == 60)
        #expect(refused > 0, "the writer should have met the outage")

        // Every stream ends with every seq once, in order (resuming if the server closed it).
        let check = try PostgresConnection.connect(ConnectionConfiguration(connectionString: url))
        let tenant = try #require(try TenantStore().find(slug: "restart", on: check)).id
        let last = try check.withTenantTransaction(tenant) { try $0.query("SELECT last_seq FROM group_seqs").rows[0].decode(Int.self, "last_seq") }
        for index in streams.indices {
            var (port, client, seen) = streams[index]
            while (seen.last ?? 1) < last {
                guard let frame = await client.receiveJSON() else {
                    client = try await WebSocketTestClient.connect(port: port, path: "/v1/stream", token: token)
                    _ = await client.receiveJSON()
                    client.sendText(#"{"type":"resume","cursors":{"\#(group)":\#(seen.last ?? 1)}}"#)
                    continue
                }
                if frame["type"] as? String == "event", let seq = frame["seq"] as? Int { seen.append(seq) }
            }
            #expect(seen == Array(2...last), "stream on \(port): \(seen.count) events, last \(seen.last ?? 0) of \(last)")
            #expect(Set(acknowledged).isSubset(of: Set(seen)))
        }
        for node in [a, b] {
            node.process.signal(SIGTERM)
            #expect(await node.process.wait() == 0)
        }
        try await cluster.stop()  // here rather than in its deinit, which cannot wait off this thread
    }
}
