/// What a message is (API.md "Messages": `kind`): a chat line, or an alert that stays open
/// until it is closed. Two kinds today (the schema's CHECK), an open set on the wire.
public struct MessageKind: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }

    public static let chat = MessageKind("chat")
    public static let alert = MessageKind("alert")

    public static let all: [MessageKind] = [.chat, .alert]
    /// One of `all`: what a request may name.
    public var isKnown: Bool { Self.all.contains(self) }

    public var description: String { name }
}

extension MessageKind: Codable {
    public init(from decoder: any Decoder) throws { self.init(try decoder.singleValueContainer().decode(String.self)) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }
}

/// Who wrote a message or caused an event (API.md "Events": `actor.type`, `author.type`): a
/// member, a bridge, or the server itself (an escalation, a deleted account's hand-over).
public struct ActorType: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }

    public static let user = ActorType("user")
    public static let bridge = ActorType("bridge")
    public static let system = ActorType("system")
    /// An official warnings feed the operator configured (a CAP publisher's).
    public static let feed = ActorType("feed")
    /// Whoever holds the operator token (audit entries only).
    public static let `operator` = ActorType("operator")

    public var description: String { name }
}

/// A message's `template` (API.md "Messages"): the key of a group's alert template, or of an
/// alert the server raises for someone, which a client shows in its own words.
public struct TemplateKey: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }

    /// A walker's check-in ran out (API.md "Check-ins").
    public static let missedCheckin = TemplateKey("missed_checkin")
    /// A walker asked for help from the check-in screen.
    public static let help = TemplateKey("help")
    /// A walker answered with their duress PIN: the silent alert.
    public static let duress = TemplateKey("duress")
    /// The addressee of "are you OK?" answered that they need help.
    public static let needHelp = TemplateKey("need_help")

    public var description: String { name }
}
