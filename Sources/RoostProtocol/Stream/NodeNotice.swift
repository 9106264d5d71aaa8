import Foundation

/// What one node tells every node (itself included) through PostgreSQL's NOTIFY, on the single
/// channel `roost_events`: one channel whatever a node serves, so each node needs one LISTEN.
/// Written by RoostPersistence in the transaction that caused it (delivered only on commit),
/// read by RoostFanout. This file is the format's only owner.
///
/// Payloads (ids lower-case):
///
///     <tenant>/<group>/<seq>[/<user>[/<hidden>[/<audience>]]][\n<frame>]
///                                                 an event was appended; <user> is the member a
///                                                 membership event is about (empty when there
///                                                 is none but <hidden> follows); <hidden> is the
///                                                 one user the event is hidden from (a duress
///                                                 alert's walker), or `Audience.managersOnly`,
///                                                 and then <audience> lists (comma-separated,
///                                                 maybe none) the only users whose streams get
///                                                 it: the group's managers when it was written;
///                                                 the frame follows when the payload stays under
///                                                 `maxBytes`
///     g/<tenant>/<group>                          a group was deleted
///     s/<tenant>/<user>/<token hash hex>          a session of <user> ended (sign-out); an
///                                                 older node's notice, without <user>, is
///                                                 still read
///     u/<tenant>/<user>                           an account ended: every session of it
///     n/<tenant>/<user>\n<frame>                  a notice frame for one user's streams
///     m/<tenant>/<group>[/<hidden>[/<audience>]]\n<frame>
///                                                 a notice frame for the streams following a
///                                                 group (no seq: not logged, not replayed),
///                                                 but not <hidden>'s, and only <audience>'s
///                                                 when it is given
public enum NodeNotice: Equatable, Sendable {
    case event(Event)
    case groupDeleted(tenant: UUID, group: UUID)
    /// `user` is nil only in a notice from a node that did not name it.
    case sessionEnded(tenant: UUID, user: UUID?, tokenHash: String)
    case accountEnded(tenant: UUID, user: UUID)
    case userNotice(tenant: UUID, user: UUID, frame: String)
    case groupNotice(tenant: UUID, group: UUID, hiddenFrom: UUID? = nil, audience: [UUID]? = nil, frame: String)

    public struct Event: Equatable, Sendable {
        public let tenant: UUID
        public let group: UUID
        public let seq: Int64
        /// The member a membership event is about (joined, left, removed).
        public let subject: UUID?
        /// The one user whose streams must not get the event (`group_events.hidden_from`).
        public let hiddenFrom: UUID?
        /// The only users whose streams get the event, when it is for the group's managers only.
        public let audience: [UUID]?
        /// The event's stream frame (`StreamEvent.frameJSON`), when it fitted in the notice.
        public let frame: String?

        public init(tenant: UUID, group: UUID, seq: Int64, subject: UUID? = nil, hiddenFrom: UUID? = nil, audience: [UUID]? = nil,
                    frame: String? = nil) {
            self.tenant = tenant
            self.group = group
            self.seq = seq
            self.subject = subject
            self.hiddenFrom = hiddenFrom
            self.audience = audience
            self.frame = frame
        }

        /// The event's kind, read from its frame (nil without one).
        public var kind: GroupEventKind? { frame.flatMap { StreamEvent.kind(inFrame: $0[...]) } }
    }

    /// The LISTEN/NOTIFY channel every node listens on.
    public static let channel = "roost_events"
    /// PostgreSQL refuses payloads of 8000 bytes or more; an event's frame is left out (nodes
    /// then read the event from the log) when the payload would pass this.
    public static let maxBytes = 7900

    // MARK: - Encoding

    public var payload: String {
        switch self {
        case .event(let event):
            let parts = Self.eventHeaderParts(tenant: event.tenant, group: event.group, subject: event.subject, hiddenFrom: event.hiddenFrom)
            let header = parts.beforeSeq + String(event.seq) + parts.afterSeq + (event.audience.map(Self.audienceText) ?? "")
            guard let frame = event.frame, header.utf8.count + 1 + frame.utf8.count < Self.maxBytes else { return header }
            return header + "\n" + frame
        case .groupDeleted(let tenant, let group): return "g/\(Self.id(tenant))/\(Self.id(group))"
        case .sessionEnded(let tenant, let user, let tokenHash): return "s/\(Self.id(tenant))/" + (user.map { Self.id($0) + "/" } ?? "") + tokenHash
        case .accountEnded(let tenant, let user): return "u/\(Self.id(tenant))/\(Self.id(user))"
        case .userNotice(let tenant, let user, let frame): return "n/\(Self.id(tenant))/\(Self.id(user))\n" + frame
        case .groupNotice(let tenant, let group, let hidden, let audience, let frame):
            // An audience goes with `Audience.managersOnly` in <hidden>, never alone.
            return "m/\(Self.id(tenant))/\(Self.id(group))" + (hidden.map { "/" + Self.id($0) + (audience.map(Self.audienceText) ?? "") } ?? "")
                + "\n" + frame
        }
    }

    /// The <audience> part after <hidden>: `/` and the ids, comma-separated. An event header's
    /// `afterSeq` for `Audience.managersOnly` ends before it: the statement that writes the event
    /// appends the managers it finds (`eventHeaderParts`).
    public static func audienceText(_ users: [UUID]) -> String {
        "/" + users.map(id).joined(separator: ",")
    }

    /// An event notice's header around its seq, for a statement that learns the seq itself:
    /// `beforeSeq + seq + afterSeq`, and for `hiddenFrom` `Audience.managersOnly` then `/` and
    /// the managers' ids, comma-separated.
    public static func eventHeaderParts(tenant: UUID, group: UUID, subject: UUID?, hiddenFrom: UUID? = nil) -> (beforeSeq: String, afterSeq: String) {
        let after = switch (subject, hiddenFrom) {
        case (nil, nil): ""
        case (let subject?, nil): "/" + id(subject)
        case (let subject, let hidden?): "/" + (subject.map(id) ?? "") + "/" + id(hidden)
        }
        return ("\(id(tenant))/\(id(group))/", after)
    }

    private static func id(_ uuid: UUID) -> String { uuid.lowercasedText }

    // MARK: - Decoding

    /// Reads a payload; nil for anything that is not one of the formats above (a notice from a
    /// newer node of a kind this one does not know is ignored, not misread).
    public init?(payload: String) {
        let newline = payload.firstIndex(of: "\n")
        let header = newline.map { payload[..<$0] } ?? payload[...]
        let body = newline.map { String(payload[payload.index(after: $0)...]) }
        let parts = header.split(separator: "/", maxSplits: 5, omittingEmptySubsequences: false)
        switch parts.first {
        case "g":
            guard parts.count == 3, body == nil, let tenant = UUID(text: parts[1]),
                  let group = UUID(text: parts[2]) else { return nil }
            self = .groupDeleted(tenant: tenant, group: group)
        case "s":
            guard (3...4).contains(parts.count), body == nil, let tenant = UUID(text: parts[1]) else { return nil }
            let user = parts.count == 4 ? UUID(text: parts[2]) : nil
            let hash = parts[parts.count - 1]
            guard parts.count == 3 || user != nil, !hash.isEmpty, hash.utf8.allSatisfy(Self.isHexDigit) else { return nil }
            self = .sessionEnded(tenant: tenant, user: user, tokenHash: String(hash))
        case "u":
            guard parts.count == 3, body == nil, let tenant = UUID(text: parts[1]),
                  let user = UUID(text: parts[2]) else { return nil }
            self = .accountEnded(tenant: tenant, user: user)
        case "n":
            guard parts.count == 3, let body, let tenant = UUID(text: parts[1]),
                  let user = UUID(text: parts[2]) else { return nil }
            self = .userNotice(tenant: tenant, user: user, frame: body)
        case "m":
            guard (3...5).contains(parts.count), let body, let tenant = UUID(text: parts[1]),
                  let group = UUID(text: parts[2]) else { return nil }
            var hidden: UUID?
            if parts.count >= 4 {
                guard let user = UUID(text: parts[3]) else { return nil }
                hidden = user
            }
            var audience: [UUID]?
            if parts.count == 5 {
                guard let users = Self.users(parts[4]) else { return nil }
                audience = users
            }
            self = .groupNotice(tenant: tenant, group: group, hiddenFrom: hidden, audience: audience, frame: body)
        default:
            guard (3...6).contains(parts.count), let tenant = UUID(text: parts[0]),
                  let group = UUID(text: parts[1]), parts[2].utf8.allSatisfy(ASCII.isDigit),
                  let seq = Int64(parts[2]), seq > 0 else { return nil }
            var subject: UUID?
            var hidden: UUID?
            var audience: [UUID]?
            if parts.count >= 4 && !(parts.count >= 5 && parts[3].isEmpty) {
                guard let user = UUID(text: parts[3]) else { return nil }
                subject = user
            }
            if parts.count >= 5 {
                guard let user = UUID(text: parts[4]) else { return nil }
                hidden = user
            }
            if parts.count == 6 {
                guard hidden == Audience.managersOnly, let users = Self.users(parts[5]) else { return nil }
                audience = users
            }
            self = .event(Event(tenant: tenant, group: group, seq: seq, subject: subject, hiddenFrom: hidden, audience: audience, frame: body))
        }
    }

    /// Comma-separated ids (none: empty text).
    private static func users(_ text: Substring) -> [UUID]? {
        var users: [UUID] = []
        for part in text.split(separator: ",") {
            guard let user = UUID(text: part) else { return nil }
            users.append(user)
        }
        return users
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
    }
}
