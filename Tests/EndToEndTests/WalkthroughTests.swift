import Foundation
import RoostTestSupport
import Testing

/// README's "A first alert, step by step" is copy-paste commands; this runs exactly that block
/// (marked `doc-block: walkthrough`) with bash, curl and websocat against a real `roost
/// serve` on a database of its own, so the README cannot drift from the server.
@Suite(.enabled(if: TestDatabase.isConfigured && Walkthrough.websocat != nil,
                "needs TEST_DATABASE_URL and ROOST_TEST_WEBSOCAT (scripts/test sets both)"))
struct WalkthroughTests {
    @Test func theReadmeWalkthroughSeesTheAlertArriveOnTheStream() async throws {
        let block = try Walkthrough.block()
        #expect(block.contains("websocat") && block.contains("/v1/admin/tenants") && block.contains("/v1/auth/register"))
        try await TestDatabase.withScratchDatabaseAsync { database in
            let admin = "walkthrough-\(UUID().uuidString)"
            let server = try await ServeProcess(databaseURL: TestDatabase.configuration(database: database).connectionString,
                                                environment: ["ROOST_ADMIN_TOKEN": admin])
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("roost-walkthrough-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            var environment = ProcessInfo.processInfo.environment
            environment["ROOST"] = "http://127.0.0.1:\(server.port)"
            environment["ROOST_ADMIN_TOKEN"] = admin
            let tools = URL(fileURLWithPath: Walkthrough.websocat!).deletingLastPathComponent().path
            environment["PATH"] = tools + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
            let script = "set -euo pipefail\ncd '\(folder.path)'\n" + block
            let shellEnvironment = environment
            // Twice, as a reader who pastes it again would: the tenant and Ann exist the second time.
            for run in 1...2 {
                let outcome = await offload { try? Subprocess.run("/bin/bash", ["-c", script], environment: shellEnvironment) }
                let result = try #require(outcome)
                #expect(result.status == 0, "run \(run): \(result.output)")
                // The tenant was created (or found), and the alert came back through the stream, whole.
                #expect(result.output.contains(run == 1 ? #""slug":"elm-street""# : #""code":"conflict""#), "run \(run): \(result.output)")
                #expect(result.output.contains(#""event": "message.created""#), "run \(run): \(result.output)")
                #expect(result.output.contains(#""text": "Smoke from the roof of number 12""#), "run \(run): \(result.output)")
                #expect(result.output.contains(#""severity": "red""#), "run \(run): \(result.output)")
                #expect(!result.output.contains("Traceback"), "run \(run): \(result.output)")
            }
            server.process.signal(SIGTERM)
            #expect(await server.process.wait() == 0)
        }
    }
}

enum Walkthrough {
    static let websocat = ProcessInfo.processInfo.environment["ROOST_TEST_WEBSOCAT"]

    /// README's walk-through block (`<!-- doc-block: walkthrough -->`), without the code fence.
    static func block() throws -> String { try DocBlocks.named("walkthrough") }
}
