import Foundation
import RoostProtocol

/// A member's plain chat line (no template, reply or attachment) for a shared commit
/// (`MessageStore.postChatLines`): who posts it, with the session token that says so.
public struct ChatLine: Sendable {
    public let tenant: UUID
    public let group: UUID
    /// The user the session is believed to be: checked by the statement, never trusted.
    public let user: UUID
    public let tokenHash: [UInt8]
    /// The line as `post` takes it: a chat message with its `client_msg_id`, text and place only.
    let message: NewMessage

    /// `text` validated and trimmed; `location` as validated JSON text.
    public init(tenant: UUID, group: UUID, user: UUID, tokenHash: [UInt8], clientMessageID: String, text: String, location: String?) {
        (self.tenant, self.group, self.user, self.tokenHash) = (tenant, group, user, tokenHash)
        message = NewMessage(clientMessageID: clientMessageID, text: text, kind: .chat, severity: nil, template: nil, location: location, replyTo: nil)
    }
}

/// What became of a chat line in a shared commit.
public enum ChatLineOutcome: Sendable, Equatable {
    /// Posted and committed: its seq and the message's JSON.
    case posted(seq: Int64, json: String)
    /// Not posted: the line needs more than its statement checks (the session ended, no
    /// member, muted, a repeat of its `client_msg_id`, members who want chat pushed), or the
    /// commit it was in failed. The caller posts it on its own.
    case declined
}

/// What a shared commit came back with: an outcome for each line, in the order given, and the
/// error that failed the whole commit, if one did (every line is then declined).
public struct ChatLineCommit: Sendable {
    public let outcomes: [ChatLineOutcome]
    public let failure: DatabaseError?
}

extension MessageStore {
    /// Posts chat lines in one transaction, sent in one round trip with its BEGIN and COMMIT
    /// (group commit): one commit, one WAL flush and one notifying commit for all of them, each
    /// line's event notified as that commit ends. Each line is one statement that checks what the
    /// usual post checks in its first round trip (a live session of the line's user, a member
    /// not muted, its membership locked) and appends nothing when it finds otherwise; its
    /// projection is the `messages` row, as `post` writes it. A statement that fails (a
    /// concurrent repeat's unique key, a deadlock) fails the commit: nothing is written, every
    /// line is declined and posted again on its own. Lines are written in the order of their
    /// groups (arrival order within one), so two commits never wait for each other's groups in
    /// opposite orders. `lifetime`, `maxAge`: a session's, as the usual path slides it. Throws
    /// when a statement could not be sent or the link failed (then whether it committed is not
    /// known: the caller posts each line the usual way, which answers a committed one as a repeat).
    public func postChatLines(_ lines: [ChatLine], lifetime: Int, maxAge: Int, on connection: PostgresConnection) throws -> ChatLineCommit {
        let order = lines.indices.sorted { (lines[$0].group.uuidString, $0) < (lines[$1].group.uuidString, $1) }
        var statements: [SQLQuery] = ["BEGIN ISOLATION LEVEL READ COMMITTED"]
        var statementOf = [Int](repeating: 0, count: lines.count)
        var caller: (tenant: UUID, user: UUID)?
        for index in order {
            let line = lines[index]
            if caller?.tenant != line.tenant || caller?.user != line.user {
                caller = (line.tenant, line.user)
                statements.append("""
                    SELECT set_config('roost.tenant_id', \(line.tenant.lowercasedText), true), set_config('roost.viewer_id', \(line.user.lowercasedText), true)
                    """)
            }
            statementOf[index] = statements.count
            statements.append(chatLineStatement(line, lifetime: lifetime, maxAge: maxAge))
        }
        statements.append("COMMIT")
        let outcome = try connection.pipeline(segments: [statements])[0]
        if let failure = outcome.failure {
            // PostgreSQL skipped the rest, COMMIT too: the transaction is open and failed, unless
            // the COMMIT itself is what failed (then it ended), where this only warns.
            if !connection.isBroken { try connection.run(script: "ROLLBACK") }
            guard !connection.isBroken else { throw failure }
            return ChatLineCommit(outcomes: Array(repeating: .declined, count: lines.count), failure: failure)
        }
        return ChatLineCommit(outcomes: try statementOf.map { index in
            guard let row = outcome.results[index].first else { return .declined }
            return .posted(seq: try row.decode(Int64.self, "seq"), json: try row.decode(String.self, "data"))
        }, failure: nil)
    }

    /// One chat line's gated append: the event, its `messages` row and the session's slide.
    private func chatLineStatement(_ line: ChatLine, lifetime: Int, maxAge: Int) -> SQLQuery {
        let (tenant, group, message, id) = (line.tenant, line.group, line.message, UUID())
        let users = UserStore()
        // The usual path asks these in its first round trip and takes another road when either
        // holds: a repeat is answered with the first message, and chat pushes are queued. Each
        // names the user by the line's parameter, not the gate's column: a prepared statement's
        // generic plan then still looks the repeat up by its whole key, where with the column it
        // read every message of the group (measured: 0.2 ms a line became 1.1 as groups grew).
        let author: SQLQuery = "\(line.user)"
        let plain: SQLQuery = """
            NOT EXISTS (SELECT 1 FROM messages r WHERE r.tenant_id = \(tenant) AND r.group_id = \(group) AND r.author_id = \(line.user)
                                                   AND r.client_msg_id = \(message.clientMessageID))
            AND NOT \(fragment: OutboxStore().chatPushesWanted(group: group, excluding: author))
            """
        return GroupEventLog.appending(
            tenant: tenant, group: group, event: .messageCreated, actorType: .user, actorID: line.user, subject: nil, hiddenFrom: nil,
            data: Self.json(id: id, group: group, authorType: .user, authorID: line.user, authorName: nil, message: message, dedupKey: nil),
            projections: """
                \(fragment: Self.messageRow(tenant: tenant, group: group, id: id, authorType: .user, authorID: line.user, message: message)),
                slid AS (\(fragment: users.slideStatement(tokenHash: line.tokenHash, lifetime: lifetime, maxAge: maxAge,
                                                         when: "EXISTS (SELECT 1 FROM appended)")))
                """,
            notifying: true,
            gate: users.liveMemberGate(tokenHash: line.tokenHash, user: line.user, group: group, also: plain))
    }
}
