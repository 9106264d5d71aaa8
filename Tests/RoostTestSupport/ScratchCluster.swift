import Foundation
import RoostPersistence

/// A PostgreSQL cluster of the test's own, for tests that stop or restart the server without
/// disturbing the shared test database. Runs as `postgres` when the tests run as root.
public final class ScratchCluster {
    public static let binDirectory: String? = {
        if let dir = ProcessInfo.processInfo.environment["ROOST_TEST_PG_BINDIR"] { return dir }
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return versions.compactMap { Int($0) }.max().map { "\(root)/\($0)/bin" }
    }()

    public let directory: String
    public let port: Int

    public init() async throws {
        guard let bin = Self.binDirectory else { throw ScratchClusterError("no PostgreSQL server binaries found") }
        directory = NSTemporaryDirectory() + "roost-cluster-\(UUID().uuidString.prefix(8))"
        port = Int.random(in: 20_000...29_999)
        try FileManager.default.createDirectory(atPath: directory + "/run", withIntermediateDirectories: true)
        if getuid() == 0 { try check(await Subprocess.run("/bin/chown", ["-R", "postgres:", directory])) }
        try check(await asOwner(bin + "/initdb", ["-D", directory + "/data", "-U", "postgres", "--auth-local=trust", "--encoding=UTF8"]))
        try await start()
    }

    deinit {
        // A test that failed before `stop()`: stopped here, synchronously (deinit cannot await).
        _ = try? Subprocess.run(getuid() == 0 ? "/usr/sbin/runuser" : Self.binDirectory! + "/pg_ctl",
                                (getuid() == 0 ? ["-u", "postgres", "--", Self.binDirectory! + "/pg_ctl"] : [])
                                    + ["-D", directory + "/data", "-m", "immediate", "-w", "stop"]) as Subprocess.Outcome
        try? FileManager.default.removeItem(atPath: directory)
    }

    public var configuration: ConnectionConfiguration {
        ConnectionConfiguration(
            connectionString: "postgresql:///postgres?host=\(directory)/run&port=\(port)&user=postgres",
            applicationName: "roost-scratch", connectTimeoutSeconds: 2)
    }

    public func start() async throws {
        let outcome = try await asOwner(Self.binDirectory! + "/pg_ctl", [
            "-D", directory + "/data", "-l", directory + "/postgres.log", "-w", "-o",
            "-c listen_addresses='' -c unix_socket_directories='\(directory)/run' -p \(port) -c fsync=off", "start",
        ])
        guard outcome.status == 0 else {
            // pg_ctl says only that it stopped waiting; the server's own log says why.
            let log = (try? String(contentsOfFile: directory + "/postgres.log", encoding: .utf8)) ?? ""
            throw ScratchClusterError(outcome.output + " | postgres.log: " + log.split(separator: "\n").suffix(5).joined(separator: " / "))
        }
    }

    public func stop() async throws {
        try check(await asOwner(Self.binDirectory! + "/pg_ctl", ["-D", directory + "/data", "-m", "fast", "-w", "stop"]))
    }

    private func asOwner(_ program: String, _ arguments: [String]) async throws -> Subprocess.Outcome {
        getuid() == 0
            ? try await Subprocess.run("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments)
            : try await Subprocess.run(program, arguments)
    }

    private func check(_ result: Subprocess.Outcome) throws {
        guard result.status == 0 else { throw ScratchClusterError(result.output) }
    }
}

public struct ScratchClusterError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
