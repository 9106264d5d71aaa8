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
        let pid = try spawn(executable, arguments, environment: environment ?? ProcessInfo.processInfo.environment, output: outputPath)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw SubprocessError("waitpid failed: \(String(cString: strerror(errno)))") }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED / WEXITSTATUS by hand: the macros are not imported into Swift.
        let exitStatus = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Outcome(status: exitStatus, output: output)
    }

    /// `run` from an async test: the wait happens on a dispatch thread. A synchronous wait in an
    /// async context holds one of the cooperative threads (one per core, two here) that every
    /// server under test in this process needs for its handlers; two such waits stalled the
    /// whole suite for as long as the programs ran.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> Outcome {
        try await offload { Result { try run(executable, arguments, environment: environment) as Outcome } }.get()
    }
}

extension Subprocess {
    /// Starts `executable` with stdin from /dev/null and stdout and stderr into `output`.
    static func spawn(_ executable: String, _ arguments: [String], environment: [String: String], output: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        // The child starts with no signal blocked and default dispositions, whatever the test
        // runner's thread had: a child that inherited a blocked SIGTERM could not be stopped.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard spawned == 0 else {
            throw SubprocessError("cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        return pid
    }
}

public struct SubprocessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A blocking TCP socket connected to 127.0.0.1:`port` with a receive timeout; nil if refused.
/// Nagle is off: what a test sends is on its way when `send` returns, not held back for the
/// server's delayed ACK (a test that moves a manual clock next relies on that).
public func connectToLoopback(port: UInt16, receiveTimeoutSeconds: Int = 10, receiveBuffer: Int32? = nil) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    if var size = receiveBuffer {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        close(fd)
        return nil
    }
    var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var noDelay: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
    return fd
}

/// A loopback TCP port nothing listens on now, for a server of another program that must be
/// told its port (Alertmanager, mosquitto): bound to port 0, read, and closed. Another process
/// could take it before the server does; the kernel hands ports out in turn, so that is rare.
public func unusedLoopbackPort() -> UInt16? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    return bound ? UInt16(bigEndian: address.sin_port) : nil
}

/// Runs blocking work (sockets, waitpid) on a dispatch thread and awaits it, so a test never
/// blocks the cooperative threads the server under test needs for its handlers.
public func offload<Value: Sendable>(_ work: @escaping @Sendable () -> Value) async -> Value {
    // A serial queue of its own runs on libdispatch's overcommit threads; the global queue
    // would run blocking work on about one thread per core and add more only slowly.
    await withCheckedContinuation { continuation in
        DispatchQueue(label: "roost.test.offload").async { continuation.resume(returning: work()) }
    }
}

/// A program left running (the `roost serve` binary), its output going to a file.
public final class RunningProcess: @unchecked Sendable {
    // `@unchecked Sendable`: pid and path are immutable; `exitStatus` is written once by `wait()`.
    public let pid: pid_t
    public let outputPath: String
    private var exitStatus: Int32?

    public init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
        outputPath = NSTemporaryDirectory() + "roost-process-\(UUID().uuidString).log"
        let pid = try Subprocess.spawn(executable, arguments, environment: environment, output: outputPath)
        self.pid = pid
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        unlink(outputPath)
    }

    public var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// Waits (polling the output file, bounded) for a line containing `text`; returns that line.
    public func waitForLine(containing text: String, timeout: Duration = .seconds(30)) async -> String? {
        var found: String?
        _ = try? await Poll.until(within: timeout) {
            found = output.split(separator: "\n").first(where: { $0.contains(text) }).map(String.init)
            return found != nil || exited()
        }
        return found
    }

    /// Whether the process has ended, reaping it if so (an unreaped child is a zombie, which
    /// `kill(pid, 0)` still finds).
    private func exited() -> Bool {
        if exitStatus != nil { return true }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return false }
        exitStatus = (raw & 0x7F) == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
        return true
    }

    public func signal(_ number: Int32) {
        kill(pid, number)
    }

    /// Waits for the process to end and returns its exit status (128 + signal if killed).
    public func wait() async -> Int32 {
        if let exitStatus { return exitStatus }
        let pid = self.pid
        let status: Int32 = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var raw: Int32 = 0
                while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
                continuation.resume(returning: (raw & 0x7F) == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F))
            }
        }
        exitStatus = status
        return status
    }
}

import Dispatch
