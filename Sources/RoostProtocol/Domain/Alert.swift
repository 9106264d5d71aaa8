/// How urgent a message is (API.md "Messages"): `info` is a chat message, `amber` and `red`
/// are alerts, which stay open until closed.
public struct AlertSeverity: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }

    public static let info = AlertSeverity("info")
    public static let amber = AlertSeverity("amber")
    public static let red = AlertSeverity("red")

    public static let all: [AlertSeverity] = [.info, .amber, .red]

    /// One of `all`: what a request may name.
    public var isKnown: Bool { Self.all.contains(self) }

    /// Amber and red: raised as an alert that stays open.
    public var raisesAlert: Bool { self == .amber || self == .red }

    public var description: String { name }
}

/// Whether an alert still wants attention (API.md "Messages": `status`).
public struct AlertStatus: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }

    public static let open = AlertStatus("open")
    public static let closed = AlertStatus("closed")

    public var description: String { name }
}
