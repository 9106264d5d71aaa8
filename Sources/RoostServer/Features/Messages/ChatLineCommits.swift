import Foundation
import RoostPersistence
import Synchronization

/// Group commit for chat lines: lines that arrive while a commit is on its way to PostgreSQL
/// wait for the next, and share it (`MessageStore.postChatLines`: one transaction, one round
/// trip, one WAL flush, one notifying commit). Nothing waits for a timer: a lone line is sent
/// at once, in one round trip where the usual post takes two, and lines batch only as fast as
/// PostgreSQL commits. Each is answered only after its commit.
///
/// A line the shared statement declines (see `ChatLineOutcome.declined`) is posted the usual
/// way (`PostMessage`) by the caller, which also answers every case but the plain one: a
/// repeat, an ended session, a muted member, a group where chat is pushed, a failed commit.
final class ChatLineCommits: Sendable {
    private struct Waiting {
        let line: ChatLine
        let reply: CheckedContinuation<ChatLineOutcome, any Error>
    }

    private struct State {
        var waiting: [Waiting] = []
        /// Commits being sent or assembled (at most `lanes`).
        var running = 0
    }

    private let pool: ConnectionPool
    private let sessionLifetime: Int
    private let sessionMaxAge: Int
    /// Commits on their way at once. Two: while one flushes, the next is assembled and sent,
    /// and a group's lines still go in order (the group's counter row is held to each commit).
    private let lanes: Int
    /// The most lines in one commit, which bounds how long its first line waits for its last.
    private let largest: Int
    private let state = Mutex(State())
    /// Whose each session token is (its hash to the user), learned from posts the usual way:
    /// the pace (`PostPace`) counts a user's posts before the line is sent, and the statement
    /// checks it. A token maps to one user for ever, so an entry is never wrong, only idle.
    private let owners = Mutex<[Data: UUID]>([:])
    private static let ownersKept = 100_000

    /// Told how many lines wait each time one is queued (a test lining lines up in order).
    private let queued: (@Sendable (Int) -> Void)?

    init(pool: ConnectionPool, sessionLifetime: Int, sessionMaxAge: Int, lanes: Int = 2, largest: Int = 64,
         queued: (@Sendable (Int) -> Void)? = nil) {
        (self.pool, self.sessionLifetime, self.sessionMaxAge, self.lanes, self.largest) = (pool, sessionLifetime, sessionMaxAge, lanes, largest)
        self.queued = queued
    }

    /// The user a session token was last seen to be, if this node has seen it.
    func owner(of tokenHash: [UInt8]) -> UUID? {
        owners.withLock { $0[Data(tokenHash)] }
    }

    /// Remembers whose a session token is (after a post the usual way checked it).
    func learn(_ tokenHash: [UInt8], is user: UUID) {
        owners.withLock { owners in
            if owners.count >= Self.ownersKept { owners.removeAll(keepingCapacity: true) }
            owners[Data(tokenHash)] = user
        }
    }

    /// Posts `line` in the next shared commit: `.posted` once it has committed, `.declined` when
    /// the caller must post it the usual way (the commit failed or was lost too). Throws only
    /// when no connection came in time, as the usual post would.
    func post(_ line: ChatLine) async throws -> ChatLineOutcome {
        try await withCheckedThrowingContinuation { reply in
            let (starts, waiting) = state.withLock { state -> (Bool, Int) in
                state.waiting.append(Waiting(line: line, reply: reply))
                guard state.running < lanes else { return (false, state.waiting.count) }
                state.running += 1
                return (true, state.waiting.count)
            }
            queued?(waiting)
            if starts { Task { await self.commitWhileWaiting() } }
        }
    }

    /// One lane: takes a connection, then commits what waits, again and again, until nothing does.
    private func commitWhileWaiting() async {
        let (lifetime, maxAge) = (sessionLifetime, sessionMaxAge)
        repeat {
            do {
                try await pool.withConnection { connection in
                    // Lines are taken once the connection is held: those that came while it was
                    // awaited go in the same commit.
                    while let batch = self.take() {
                        do {
                            let commit = try MessageStore().postChatLines(batch.map(\.line), lifetime: lifetime, maxAge: maxAge, on: connection)
                            for (waiting, outcome) in zip(batch, commit.outcomes) { waiting.reply.resume(returning: outcome) }
                        } catch {
                            // Whatever failed (a statement refused before it was sent, the link lost
                            // before or after the commit), each line is posted the usual way, which
                            // fails alone if it must and answers a line that did commit as a repeat.
                            for waiting in batch { waiting.reply.resume(returning: .declined) }
                            // A broken connection goes back to the pool to be replaced; the lane takes another.
                            if connection.isBroken { return }
                        }
                    }
                }
            } catch {
                // No connection came in time: the lines waiting for one have waited as long as
                // the usual post would have, and are told so.
                while let batch = take() {
                    for waiting in batch { waiting.reply.resume(throwing: error) }
                }
            }
        } while !finished()
    }

    /// The next lines to commit, or nil when none wait.
    private func take() -> [Waiting]? {
        state.withLock { state in
            guard !state.waiting.isEmpty else { return nil }
            let count = min(largest, state.waiting.count)
            defer { state.waiting.removeFirst(count) }
            return Array(state.waiting.prefix(count))
        }
    }

    /// Ends the lane when nothing waits; false when a line came after the last `take`.
    private func finished() -> Bool {
        state.withLock { state in
            guard state.waiting.isEmpty else { return false }
            state.running -= 1
            return true
        }
    }
}
