import RoostProtocol
import Synchronization

/// A request body that arrives in pieces while its handler runs (routes added with
/// `streamedBody: true`): the connection pushes each piece as the parser yields it, and the
/// handler takes them with `next()`. Once `highWater` bytes wait untaken the connection stops
/// reading the socket (TCP holds the client back); when the handler has taken them down to
/// `lowWater`, `resume` asks the connection to read again. So an upload of any size costs a
/// connection at most about `highWater` bytes, however slow the storage behind the handler.
public final class RequestBodyStream: Sendable {
    private struct State {
        var parts: [[UInt8]] = []
        var buffered = 0
        var ended = false
        var failure: APIError?
        var waiter: CheckedContinuation<[UInt8]?, any Error>?
        /// The connection was told to pause and not yet to resume.
        var paused = false
        /// The handler has asked for the body at least once.
        var asked = false
    }

    private let state = Mutex(State())
    let highWater: Int
    let lowWater: Int
    private let resume: @Sendable () -> Void
    /// Called once, at the handler's first `next()`: the handler wants the body (a client
    /// waiting for `100 Continue` is told only then, RFC 9110 §10.1.1; a handler that refuses
    /// the request first answers without it).
    private let firstRead: @Sendable () -> Void

    init(highWater: Int, lowWater: Int, firstRead: @escaping @Sendable () -> Void = {}, resume: @escaping @Sendable () -> Void) {
        self.highWater = highWater
        self.lowWater = lowWater
        self.firstRead = firstRead
        self.resume = resume
    }

    /// The next piece, nil at the end of the body; throws the API error the body failed with
    /// (malformed framing, the client went away, the upload stalled).
    public func next() async throws -> [UInt8]? {
        if state.withLock({ state in defer { state.asked = true }; return !state.asked }) { firstRead() }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8]?, any Error>) in
            enum Now { case part([UInt8], resume: Bool), end, failed(APIError), wait }
            let now = state.withLock { state -> Now in
                if !state.parts.isEmpty {
                    let part = state.parts.removeFirst()
                    state.buffered -= part.count
                    let resume = state.paused && state.buffered <= lowWater
                    if resume { state.paused = false }
                    return .part(part, resume: resume)
                }
                if let failure = state.failure { return .failed(failure) }
                if state.ended { return .end }
                state.waiter = continuation
                return .wait
            }
            switch now {
            case .part(let part, let resume):
                if resume { self.resume() }
                continuation.resume(returning: part)
            case .end: continuation.resume(returning: nil)
            case .failed(let error): continuation.resume(throwing: error)
            case .wait: break
            }
        }
    }

    /// A piece from the connection; true when the connection should stop reading for now.
    func push(_ part: [UInt8]) -> Bool {
        let (waiter, pause) = state.withLock { state -> (CheckedContinuation<[UInt8]?, any Error>?, Bool) in
            guard !state.ended, state.failure == nil else { return (nil, false) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (waiter, false)
            }
            state.parts.append(part)
            state.buffered += part.count
            if state.buffered >= highWater { state.paused = true }
            return (nil, state.paused)
        }
        waiter?.resume(returning: part)
        return pause
    }

    func end() {
        let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, any Error>? in
            state.ended = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The body will not complete: the handler's next `next()` throws `error` (pieces already
    /// pushed are dropped). Nothing happens after `end`, or after an earlier failure.
    func fail(_ error: APIError) {
        let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, any Error>? in
            guard !state.ended, state.failure == nil else { return nil }
            state.failure = error
            state.parts = []
            state.buffered = 0
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(throwing: error)
    }
}
