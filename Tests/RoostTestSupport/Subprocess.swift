import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs a program to completion with posix_spawn and waitpid.
///
/// Foundation's Process is avoided on purpose: in a test host its exit monitoring can miss a
/// child's exit, and a pipe for output would be held open by daemons the child forks
/// (pg_ctl's postmaster). Output goes to a temporary file instead.
public enum Subprocess {
    public struct Outcome: Sendable {
        public let status: Int32
        public let output: String
    }

    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Outcome {
        let outputPath = NSTemporaryDirectory() + "roost-subprocess-\(UUID().uuidString)"
        defer { unlink(outputPath) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        let environment = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else {
            throw SubprocessError("cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw SubprocessError("waitpid failed: \(String(cString: strerror(errno)))") }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED / WEXITSTATUS by hand: the macros are not imported into Swift.
        let exitStatus = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Outcome(status: exitStatus, output: output)
    }
}

public struct SubprocessError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
