import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every shell block of README.md and docs/*.md is run by a test or says why not (`DocBlocks`),
/// and the runnable ones run here, with bash and curl, against a real `roost serve` on a
/// database of their own. A block written for the quickstart's server (`localhost:8080`,
/// `localhost:9090`) is run with the test server's ports put in their place; the variables a
/// block says it needs (`$T`, `$GROUP`...) are set as a reader's would be.
struct DocBlocksTests {
    /// The blocks a test runs, and the test that fetches each with `DocBlocks.named`.
    static let runners: [String: String] = [
        "walkthrough": "WalkthroughTests",
        "health": "DocBlocksTests", "first-steps": "DocBlocksTests", "checkins": "DocBlocksTests",
        "bridge-create": "DocBlocksTests", "bridge-alerts": "DocBlocksTests", "bridge-signed": "DocBlocksTests",
        "bridge-device-keys": "DocBlocksTests", "bridge-pagerduty": "DocBlocksTests", "bridge-dc09": "DocBlocksTests",
    ]

    @Test func everyShellBlockIsRunByATestOrSaysWhyNot() throws {
        let blocks = try DocBlocks.all()
        #expect(blocks.count > 20, "found \(blocks.count) shell blocks")
        let unmarked = blocks.filter { $0.marker == .none }.map { "\($0.file):\($0.line)" }
        #expect(unmarked.isEmpty, "shell blocks neither run by a test nor saying why not: \(unmarked)")
        let named = blocks.compactMap { block -> String? in if case .runs(let name) = block.marker { name } else { nil } }
        #expect(named.sorted() == Self.runners.keys.sorted(), "blocks marked to run: \(named.sorted())")
        for block in blocks {
            if case .notRun(let reason) = block.marker { #expect(reason.count >= 20, "\(block.file):\(block.line) says too little: \(reason)") }
        }
        // Each runner really fetches its block (a name no test asks for would be a claim only).
        let tests = DocBlocks.root.appendingPathComponent("Tests")
        let sources = try FileManager.default.subpathsOfDirectory(atPath: tests.path).filter { $0.hasSuffix(".swift") }
            .map { try String(contentsOf: tests.appendingPathComponent($0), encoding: .utf8) }.joined()
        for (name, runner) in Self.runners {
            #expect(sources.contains(#"DocBlocks.named("\#(name)")"#), "\(runner) does not fetch the block \(name)")
        }
    }

    /// Runs `block` with bash (`set -euo pipefail`) in a fresh folder, the quickstart's ports
    /// replaced by the test server's, with `variables` in its environment.
    static func run(_ block: String, port: UInt16, metricsPort: UInt16? = nil, _ variables: [String: String] = [:]) async throws -> Subprocess.Outcome {
        var script = block.replacingOccurrences(of: "localhost:8080", with: "127.0.0.1:\(port)")
            .replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(port)")
        if let metricsPort { script = script.replacingOccurrences(of: "localhost:9090", with: "127.0.0.1:\(metricsPort)") }
        var environment = ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory()]
        environment.merge(variables) { $1 }
        return try await Subprocess.run("/bin/bash", ["-c", "set -euo pipefail\ncd \"$(mktemp -d)\"\n" + script], environment: environment)
    }

    static func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    @Test(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
    func theOperatorsAndBridgesBlocksRunAsWritten() async throws {
        try await TestDatabase.withScratchDatabaseAsync { database in
            let admin = "doc-blocks-\(UUID().uuidString)"
            let server = try await ServeProcess(["--metrics-listen", "127.0.0.1:0"], databaseURL: TestDatabase.configuration(database: database).connectionString,
                                                environment: ["ROOST_ADMIN_TOKEN": admin])
            let port = server.port
            let base = "http://127.0.0.1:\(port)"

            // README's health checks.
            let health = try await Self.run(DocBlocks.named("health"), port: port, metricsPort: server.metricsPort)
            #expect(health.status == 0 && health.output.contains(#"{"status":"ok"}"#) && health.output.contains(#""status":"ready""#)
                    && health.output.contains("roost_build_info{"), "\(health.output)")

            // OPERATIONS' first steps make the tenant.
            let first = try await Self.run(DocBlocks.named("first-steps"), port: port, ["ROOST_ADMIN_TOKEN": admin])
            #expect(first.status == 0 && first.output.contains(#""slug":"elm-street""#), "\(first.output)")

            // Ben walks home watched by two groups; Cy asks after him (README's check-in block).
            let api = try APIClient(port: port)
            func person(_ name: String) async throws -> (token: String, id: String) {
                let (status, body) = try await api.call("POST", "/v1/auth/register", ["tenant": "elm-street", "email": "\(name)@example.org",
                                                                                     "password": "a long enough password", "display_name": name])
                #expect(status == 201, "\(body)")
                return (try #require(body["token"] as? String), try #require((body["user"] as? [String: Any])?["id"] as? String))
            }
            let ben = try await person("ben"), cy = try await person("cy")
            let elm = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm"], token: ben.token).1["id"] as? String)
            let oak = try #require(try await api.call("POST", "/v1/groups", ["name": "Oak"], token: ben.token).1["id"] as? String)
            // Cy is Ben's neighbour in Elm (put there directly: invitations have tests of their own).
            let connection = try TestDatabase.connect(database: database)
            let tenant = try #require(try TenantStore().find(slug: "elm-street", on: connection)).id
            let (elmID, cyID) = (try #require(UUID(uuidString: elm)), try #require(UUID(uuidString: cy.id)))
            try connection.withTenantTransaction(tenant) {
                try $0.query("INSERT INTO memberships (tenant_id, group_id, user_id, role) VALUES (\(tenant), \(elmID), \(cyID), 'member')")
            }
            let walk = try await Self.run(DocBlocks.named("checkins"), port: port, ["T": ben.token, "ELM": elm, "OAK": oak, "C": cy.token, "BEN": ben.id])
            #expect(walk.status == 0 && !walk.output.contains(#""error""#), "\(walk.output)")
            let (_, walks) = try await api.call("GET", "/v1/checkins", token: ben.token)
            #expect((walks["items"] as? [[String: Any]])?.first?["status"] as? String == "completed", "\(walks)")
            #expect(walk.output.contains(#""status":"safe""#), "the request was answered: \(walk.output)")

            // BRIDGES: a signing bridge made by its block, an unsigned one for the plain block.
            let made = try await Self.run(DocBlocks.named("bridge-create"), port: port, ["ROOST": base, "GROUP": elm, "OWNER_TOKEN": ben.token])
            let signing = Self.json(made.output)
            let key = try #require(signing["key"] as? String, "\(made.output)"), secret = try #require(signing["secret"] as? String, "\(made.output)")
            let plain = try #require(try await api.call("POST", "/v1/groups/\(elm)/bridges", ["name": "Garden camera"], token: ben.token).1["key"] as? String)
            let alerts = try await Self.run(DocBlocks.named("bridge-alerts"), port: port, ["ROOST": base, "KEY": plain])
            #expect(alerts.status == 0 && alerts.output.contains("Back door opened while armed") && !alerts.output.contains(#""error""#), "\(alerts.output)")
            let signed = try await Self.run(DocBlocks.named("bridge-signed"), port: port, ["ROOST": base, "KEY": key, "SECRET": secret])
            #expect(signed.status == 0 && signed.output.contains(#""dedup_key":"zone-3""#) && !signed.output.contains(#""error""#), "\(signed.output)")
            // A bridge with a hook URL for the devices' block; the PagerDuty block with the plain key.
            let (_, hooked) = try await api.call("POST", "/v1/groups/\(elm)/bridges", ["name": "Driveway NVR", "hook": true], token: ben.token)
            let devices = try await Self.run(DocBlocks.named("bridge-device-keys"), port: port, [
                "ROOST": base, "KEY": try #require(hooked["key"] as? String), "HOOK_PATH": try #require(hooked["hook_path"] as? String),
            ])
            #expect(devices.status == 0 && devices.output.contains("Motion on the driveway") && devices.output.contains(#""closed""#)
                    && !devices.output.contains(#""error""#), "\(devices.output)")
            let paged = try await Self.run(DocBlocks.named("bridge-pagerduty"), port: port, ["ROOST": base, "KEY": plain])
            #expect(paged.status == 0 && paged.output.components(separatedBy: #""status":"success""#).count == 3, "\(paged.output)")
            // BRIDGES §12: an alarm panel's identity, its key shown once.
            let panel = Self.json(try await Self.run(DocBlocks.named("bridge-dc09"), port: port, ["ROOST": base, "GROUP": elm, "OWNER_TOKEN": ben.token]).output)
            let identity = try #require(panel["dc09"] as? [String: Any], "\(panel)")
            #expect(identity["account"] as? String == "1234" && (identity["key"] as? String)?.count == 32 && identity["key_bits"] as? Int == 128)

            server.process.signal(SIGTERM)
            #expect(await server.process.wait() == 0)
        }
    }
}
