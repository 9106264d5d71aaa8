import Synchronization

/// One of a node's background loops (the scheduler's rounds, the feed poller, the outbox
/// worker): started once, and stopped by cancelling it and waiting for what it is doing to end.
final class BackgroundTask: Sendable {
    private let running = Mutex<Task<Void, Never>?>(nil)

    /// Runs `body` in a task of its own, unless it runs already.
    func start(_ body: @escaping @Sendable () async -> Void) {
        running.withLock { task in
            guard task == nil else { return }
            task = Task { await body() }
        }
    }

    /// Cancels the task and returns once it has ended.
    func stop() async {
        let task = running.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        task?.cancel()
        await task?.value
    }
}
