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
    /// line's event notified as that commit ends. The lines of one tenant are one statement
    /// (`chatLinesStatement`; a tenant's lone line, `chatLineStatement`), which checks for each
    /// what the usual post checks in its first round trip (a live session of the line's user, a
    /// member not muted, its membership locked) and appends nothing for a line where it finds
    /// otherwise; its projection is the `messages` row, as `post` writes it. A line that repeats the `client_msg_id` of an earlier line of
    /// the same author in the same group is declined before anything is sent (its statement
    /// would fail the commit on the unique key). A statement that fails (a concurrent repeat's
    /// unique key, a deadlock) fails the commit: nothing is written, every line is declined and
    /// posted again on its own. `lifetime`, `maxAge`: a session's, as the usual path slides it.
    /// Throws when a statement could not be sent or the link failed (then whether it committed
    /// is not known: the caller posts each line the usual way, which answers a committed one as
    /// a repeat).
    public func postChatLines(_ lines: [ChatLine], lifetime: Int, maxAge: Int, on connection: PostgresConnection) throws -> ChatLineCommit {
        // In the order of their tenants and groups (arrival order within one), so that commits
        // lock groups' counters and memberships in one order and never wait for each other in
        // opposite orders.
        let order = lines.indices.sorted {
            (lines[$0].tenant.uuidString, lines[$0].group.uuidString, $0) < (lines[$1].tenant.uuidString, lines[$1].group.uuidString, $1)
        }
        var seen = Set<RepeatKey>()
        let sent = order.filter { seen.insert(RepeatKey(lines[$0])).inserted }
        var statements: [SQLQuery] = ["BEGIN ISOLATION LEVEL READ COMMITTED"]
        var tenants: [(statement: Int, lines: [Int])] = []
        var start = sent.startIndex
        while start < sent.endIndex {
            let tenant = lines[sent[start]].tenant
            let end = sent[start...].firstIndex { lines[$0].tenant != tenant } ?? sent.endIndex
            let indices = Array(sent[start..<end])
            // The viewer is cleared: the statement reads for many users, and row security then
            // hides nothing a repeat could be (a line it misses fails the commit on the unique key).
            statements.append("""
                SELECT set_config('roost.tenant_id', \(tenant.lowercasedText), true), set_config('roost.viewer_id', '', true)
                """)
            tenants.append((statements.count, indices))
            // A lone line is cheaper for PostgreSQL as a statement of its own (measured: 0.71 ms
            // of its CPU a post paced at 1,000 a second as one statement for the lines, 0.50 as
            // a statement for each; commits then hold a line or two).
            statements.append(indices.count == 1
                ? chatLineStatement(lines[indices[0]], lifetime: lifetime, maxAge: maxAge)
                : chatLinesStatement(tenant: tenant, indices.map { lines[$0] }, lifetime: lifetime, maxAge: maxAge))
            start = end
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
        var outcomes = [ChatLineOutcome](repeating: .declined, count: lines.count)
        for (statement, indices) in tenants {
            for row in outcome.results[statement].rows {
                let line = indices.count == 1 ? indices[0] : indices[try row.decode(Int.self, "n") - 1]
                outcomes[line] = .posted(seq: try row.decode(Int64.self, "seq"), json: try row.decode(String.self, "data"))
            }
        }
        return ChatLineCommit(outcomes: outcomes, failure: nil)
    }

    /// What makes two lines the same message: the unique key of `messages` it would fill.
    private struct RepeatKey: Hashable {
        let tenant: UUID, group: UUID, user: UUID, clientMessageID: String?
        init(_ line: ChatLine) {
            (tenant, group, user, clientMessageID) = (line.tenant, line.group, line.user, line.message.clientMessageID)
        }
    }

    /// That a line (its group, author and client id, each an SQL expression) is plain: no repeat
    /// of an earlier message, and nobody in the group wants chat pushed. The usual path asks these
    /// in its first round trip and takes another road when either fails: a repeat is answered
    /// with the first message, and chat pushes are queued.
    private static func plainLine(group: SQLQuery, author: SQLQuery, clientMessageID: SQLQuery) -> SQLQuery {
        """
        NOT \(fragment: repeatQuestion(group: group, author: author, clientMessageID: clientMessageID))
        AND NOT \(fragment: OutboxStore().chatPushesWanted(group: group, excluding: author))
        """
    }

    /// One chat line's gated append: the event, its `messages` row and the session's slide. A
    /// row with its `seq` and `data` when it was appended.
    private func chatLineStatement(_ line: ChatLine, lifetime: Int, maxAge: Int) -> SQLQuery {
        let (tenant, group, message, id) = (line.tenant, line.group, line.message, UUID())
        let users = UserStore()
        // The user is the line's parameter, not the gate's column.
        let plain = Self.plainLine(group: "\(group)", author: "\(line.user)", clientMessageID: "\(message.clientMessageID)")
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

    /// One tenant's chat lines, in the order given, as one statement: each line's gated append
    /// (the event, its `messages` row and the session's slide), every group's counter moved
    /// once by its count of lines. A row for each line appended: `n` (its place in `lines`,
    /// from 1), `seq` and `data`. The lines' values go as arrays, so the statement's text is the
    /// same for any number of lines and is prepared once a connection.
    private func chatLinesStatement(tenant: UUID, _ lines: [ChatLine], lifetime: Int, maxAge: Int) -> SQLQuery {
        let ids = lines.map { _ in UUID() }
        let data = zip(lines, ids).map { line, id in
            Self.json(id: id, group: line.group, authorType: .user, authorID: line.user, authorName: nil, message: line.message, dedupKey: nil)
        }
        // Every chat line's data has the same holes: its pieces of text go as one array each.
        let pieces = data.map(\.texts)
        let shape = pieces.first?.count ?? 0
        assert(pieces.allSatisfy { $0.count == shape }, "chat lines' data differ in shape")
        let headers = lines.map { NodeNotice.eventHeaderParts(tenant: tenant, group: $0.group, subject: nil) }
        let frames = lines.map { StreamEvent.frameParts(group: $0.group, event: .messageCreated) }
        let pieceColumns = (0..<shape).map { "t\($0)" }
        let pieceArrays = (0..<shape).reduce(into: "" as SQLQuery) { sql, index in sql = "\(fragment: sql), \(pieces.map { $0[index] })::text[]" }
        let users = UserStore()
        let plain = Self.plainLine(group: "l.group_id", author: "l.user_id", clientMessageID: "l.client_msg_id")
        return """
            WITH line AS (
                SELECT * FROM unnest(\(lines.map(\.group))::uuid[], \(lines.map(\.user))::uuid[], \(lines.map { Digest.hex($0.tokenHash) })::text[],
                                     \(lines.map { $0.message.clientMessageID ?? "" })::text[], \(lines.map(\.message.text))::text[],
                                     \(lines.map { $0.message.location ?? "" })::text[], \(ids)::uuid[],
                                     \(headers.map(\.beforeSeq))::text[], \(headers.map(\.afterSeq))::text[], \(frames.map(\.beforeSeq))::text[],
                                     \(frames.map(\.beforeAt))::text[], \(frames.map(\.beforeData))::text[]\(fragment: pieceArrays))
                    WITH ORDINALITY AS l(group_id, user_id, token_hex, client_msg_id, text, location, id, header_before_seq, header_after_seq,
                                         frame_before_seq, frame_before_at, frame_before_data\(unsafeRaw: pieceColumns.map { ", " + $0 }.joined()), n)),
            keyed AS (SELECT l.*, decode(l.token_hex, 'hex') AS token_hash FROM line l),
            gate AS (\(fragment: users.liveMembersGate(lines: "keyed", also: plain))),
            counted AS (SELECT group_id, count(*) AS lines FROM gate GROUP BY group_id),
            -- The counters are locked in the order of their groups before any is moved.
            locked AS (SELECT q.group_id FROM group_seqs q WHERE q.group_id IN (SELECT group_id FROM counted) ORDER BY q.group_id FOR UPDATE),
            next AS (
                UPDATE group_seqs q SET last_seq = q.last_seq + c.lines FROM counted c
                WHERE q.group_id = c.group_id AND q.group_id IN (SELECT group_id FROM locked)
                RETURNING q.group_id, q.last_seq - c.lines AS before_seq, now() AS created_at,
                          to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at),
            numbered AS (
                SELECT gate.*, x.before_seq + row_number() OVER (PARTITION BY gate.group_id ORDER BY gate.n) AS seq, x.created_at, x.at
                FROM gate JOIN next x ON x.group_id = gate.group_id),
            filled AS (SELECT gate.*, \(fragment: data.first?.assembled(texts: pieceColumns.map { "gate.\(unsafeRaw: $0)" }) ?? "''") AS data
                       FROM numbered gate),
            appended AS (
                INSERT INTO group_events (tenant_id, group_id, seq, event, actor_type, actor_id, data, created_at)
                SELECT \(tenant), group_id, seq, \(GroupEventKind.messageCreated.name), \(ActorType.user), user_id, data::jsonb, created_at FROM filled
                RETURNING seq),
            posted AS (
                INSERT INTO messages (tenant_id, group_id, seq, id, author_type, author_id, kind, text, location, client_msg_id, created_at)
                SELECT \(tenant), group_id, seq, id, \(ActorType.user), user_id, \(MessageKind.chat), text, nullif(location, '')::jsonb,
                       client_msg_id, created_at FROM filled
                RETURNING seq),
            slid AS (\(fragment: users.slideStatement(sessions: "token_hash IN (SELECT token_hash FROM filled)", lifetime: lifetime, maxAge: maxAge)))
            SELECT n, seq, data, \(fragment: GroupEventLog.notified) AS notified
            FROM (SELECT n, seq, data, \(fragment: GroupEventLog.framing(
                      header: ("header_before_seq", "header_after_seq"), frame: ("frame_before_seq", "frame_before_at", "frame_before_data")))
                  FROM filled) framed
            ORDER BY n
            """
    }
}
