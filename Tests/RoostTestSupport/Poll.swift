/// Waiting for a condition a test cannot be told of (a row another process writes, a count a
/// server keeps, a job another node may claim first): it is checked, and between checks the
/// test yields for `every`, until it holds or `within` has passed. This is the suite's one poll;
/// what can be awaited (a frame, a line of output, a delivery) is awaited instead. `within` is
/// no budget: it only bounds a run that would otherwise hang, and is generous for a busy
/// machine. The caller asserts the result.
public enum Poll {
    @discardableResult
    public static func until(within: Duration = .seconds(60), every: Duration = .milliseconds(20),
                             _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + within
        while true {
            if try await condition() { return true }
            if ContinuousClock.now >= deadline { return false }
            try await Task.sleep(for: every)
        }
    }

    /// Lets time pass with nothing to wait for, where a test shows something does *not* happen
    /// (more rounds run and a count stays one, a socket stays quiet); each caller says why.
    public static func quiet(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}
