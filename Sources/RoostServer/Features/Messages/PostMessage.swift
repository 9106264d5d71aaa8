import Foundation
import RoostPersistence
import RoostProtocol

/// A member posts a chat message or raises an alert (API.md "Messages and alerts"). Idempotent
/// on the author's `client_msg_id`: a repeat answers with the message first posted. Amber and
/// red alerts are counted against the author's hourly limit and queue a push to every other
/// member in the same transaction.
struct PostMessage: GroupUseCase {
    let group: UUID
    let clientMessageID: String
    let kind: MessageKind
    let text: String
    let severity: String?
    let template: String?
    let location: String?
    let replyTo: Int64?
    /// Uploads of the poster's to link into the message, in order (at most 4).
    let attachments: [UUID]
    /// Amber and red alerts one member may raise in an hour (`ROOST_LIMIT_ALERTS_PER_HOUR`).
    let alertsPerHour: Int
    /// The account's posts a minute on this node; nil: not limited (server-side posts, tests,
    /// or a line whose pace was already taken for a shared commit that declined it).
    private(set) var pace: PostPace?
    /// Chat messages of one author in one group that push to members who asked for chat, an hour.
    static let chatPushesPerAuthorPerHour = 20

    /// Whether a new message was posted (`false`: a repeat of `client_msg_id`), and its JSON.
    typealias Output = (created: Bool, json: String)

    /// Validates what the client sent; 400 naming the first field at fault.
    init(group: UUID, clientMessageID: String, kind: MessageKind, text: String?, severity: String?, template: String?, location: Location?,
         replyTo: Int64?, attachments: [UUID] = [], alertsPerHour: Int, pace: PostPace? = nil) throws(APIError) {
        self.clientMessageID = try BoundedText.clientKey(clientMessageID, field: "client_msg_id")
        guard kind.isKnown else { throw APIError.invalid("kind must be chat or alert", "kind") }
        if let severity {
            guard kind == .alert, AlertSeverity(severity).isKnown else {
                throw APIError.invalid("severity is info, amber or red, and only for alerts", "severity")
            }
        }
        let trimmed = BoundedText.trimmed(text ?? "")
        try Attachments.validate(attachments)
        // An alert from a template may leave its text to the template, and a photo may speak for itself.
        if !(trimmed.isEmpty && ((kind == .alert && template != nil) || !attachments.isEmpty)) {
            _ = try BoundedText.validate(trimmed, field: "text", range: 1...4000, allowNewlines: true)
        }
        self.location = try location?.validatedJSON()
        if let replyTo, replyTo < 1 { throw Self.badReply }
        self.group = group
        self.kind = kind
        self.text = trimmed
        self.severity = severity
        self.template = template
        self.replyTo = replyTo
        self.attachments = attachments
        self.alertsPerHour = alertsPerHour
        self.pace = pace
    }

    static let badReply = APIError.invalid("reply_to must be a seq of this group", "reply_to")

    /// A chat line of text (and a place) only: what a shared commit posts (`ChatLineCommits`).
    var isPlainChat: Bool { kind == .chat && template == nil && replyTo == nil && attachments.isEmpty }

    /// This post as a line for a shared commit, by `user` (as the node last saw the token's owner).
    func chatLine(by token: TenantToken, user: UUID) -> ChatLine {
        ChatLine(tenant: token.tenant, group: group, user: user, tokenHash: token.hash, clientMessageID: clientMessageID, text: text,
                 location: location)
    }

    /// The same post with its pace already taken.
    var paced: PostMessage {
        var post = self
        post.pace = nil
        return post
    }

    /// Asked with the membership check, so that neither costs a round trip of its own: a chat
    /// line asks whether anyone wants it pushed (then the post knows before it is sent whether
    /// anything follows it in the transaction); an alert, whether its author raised it already
    /// (a client's retry, answered with the first one before the hourly limit is counted).
    func openingQuestion(caller: SQLQuery) -> SQLQuery? {
        kind == .chat
            ? OutboxStore().chatPushesWanted(group: group, excluding: caller)
            : MessageStore().repeatQuestion(group: group, author: caller, clientMessageID: clientMessageID)
    }

    /// What the opening's answer means for this post: its question depends on the kind.
    enum Opening: Equatable {
        /// The transaction was opened without the question (as a test may): each is asked later.
        case notAsked
        /// A chat line: whether any member wants chat pushed.
        case chatPushesWanted(Bool)
        /// An alert: whether its author already raised one with this `client_msg_id`.
        case alreadyRaised(Bool)
    }

    func opening(_ answer: Bool?) -> Opening {
        guard let answer else { return .notAsked }
        return kind == .chat ? .chatPushesWanted(answer) : .alreadyRaised(answer)
    }

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> Output {
        let opening = opening(caller.answer)
        if let wait = pace?.take(caller.user.id) {
            throw APIError(.tooManyRequests, code: .rateLimited, message: "too many messages this minute; slow down",
                           headers: ["Retry-After": String(wait)])
        }
        let store = MessageStore()
        var message = NewMessage(clientMessageID: clientMessageID, text: text, kind: kind, severity: nil, template: nil,
                                 location: location, replyTo: replyTo)
        if let key = template {
            guard let template = try TemplateStore().template(group: group, key: key, on: connection) else {
                throw APIError.invalid("no such template in this group", "template")
            }
            message.template = key
            if message.text.isEmpty { message.text = template.text }
            if kind == .alert && severity == nil { message.severity = template.severity }
        }
        if kind == .alert { message.severity = severity ?? message.severity ?? AlertSeverity.amber.name }
        // A muted member is heard only when it matters most.
        if message.severity != AlertSeverity.red.name { try caller.requireNotMuted() }
        let target = try replyTo.map { seq in
            guard let target = try store.replyTarget(group: group, seq: seq, on: connection) else { throw Self.badReply }
            return target
        }
        // A reply to a message hidden from someone is hidden from them too.
        message.hiddenFrom = target?.hiddenFrom
        message.attachments = try Attachments.resolve(attachments, uploaderType: "user", uploader: caller.user.id, intoAlert: kind == .alert,
                                                      on: connection)
        let raisesAlert = message.severity.map { AlertSeverity($0).raisesAlert } == true
        // Amber and red alerts reach people's phones: counted per member (a repeat rolls back with
        // the insert). So are info alerts with a place: each tells members' distances from it, and
        // a few of them once located a neighbour's home.
        if raisesAlert || (message.severity == AlertSeverity.info.name && location != nil) {
            // A client retrying an alert it already raised gets it back, whatever the limit. Looked
            // up when the transaction's opening said it is a repeat (or, run without that
            // question, as a test may, here); a repeat racing this post fails its insert instead.
            if opening != .alreadyRaised(false),
               let earlier = try store.idempotent(group: group, author: caller.user.id, clientMessageID: clientMessageID, on: connection) {
                return (false, earlier)
            }
            try Throttle.count([RateLimit(RateLimitKey(.alert, caller.user.tenantID.uuidString, caller.user.id.uuidString), limit: alertsPerHour,
                                          window: Throttle.hour)], "too many alerts raised this hour", on: connection)
        }
        // Someone wants this chat line pushed: asked when the transaction opened (run without
        // that question, as a test may, it is asked here).
        let chatPushes = switch opening {
        case .chatPushesWanted(let wanted): wanted
        case .notAsked where kind == .chat: try OutboxStore().chatPushesWanted(group: group, excluding: caller.user.id, on: connection)
        case .notAsked, .alreadyRaised: false
        }
        // A reply to an alert is an answer its author hears of.
        let repliedTo = target?.alertAuthor.flatMap { $0 == target?.hiddenFrom ? nil : $0 }
        // A repeated client_msg_id fails the insert (uniqueViolation): see `Repeat`. When nothing
        // follows the post, the transaction commits with it, in the same round trip.
        let posted = try store.post(tenant: caller.user.tenantID, group: group, authorType: .user, authorID: caller.user.id,
                                    authorName: caller.user.displayName, message: message,
                                    committing: !raisesAlert && !chatPushes && repliedTo == nil, on: connection)
        if raisesAlert {
            try OutboxStore().enqueueAlertPushes(group: group, seq: posted.seq, excluding: caller.user.id, alert: RawJSON(posted.json),
                                                 red: message.severity == AlertSeverity.red.name, committing: repliedTo == nil, on: connection)
        } else if chatPushes, message.hiddenFrom == nil,
                  // A reply to a hidden alert is pushed to nobody: a push cannot be hidden from one member, or kept to the managers.
                  // Chat is not rate-limited, pushes to phones are: a chatty author's later lines wait in the app.
                  try AlertPushes.allowed(RateLimit(RateLimitKey(.chatPush, caller.user.tenantID.uuidString, group.uuidString, caller.user.id.uuidString),
                                                    limit: Self.chatPushesPerAuthorPerHour, window: Throttle.hour), on: connection) {
            try OutboxStore().enqueueChatPushes(group: group, excluding: caller.user.id, message: RawJSON(posted.json), on: connection)
        }
        if let replyTo, let author = repliedTo {
            try AlertPushes.response(group: group, seq: replyTo, author: author, responder: caller.user, response: nil, note: nil,
                                     reply: (posted.seq, message.text), on: connection)
        }
        return (true, posted.json)
    }

    /// The message the caller already posted with this `client_msg_id`, for the loser of a race
    /// between two concurrent repeats (its insert failed on the unique key).
    var repeated: Repeat { Repeat(group: group, clientMessageID: clientMessageID) }

    struct Repeat: GroupUseCase {
        let group: UUID
        let clientMessageID: String

        func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> String? {
            try MessageStore().idempotent(group: group, author: caller.user.id, clientMessageID: clientMessageID, on: connection)
        }
    }
}
