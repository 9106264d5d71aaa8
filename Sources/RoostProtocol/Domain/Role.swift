/// A member's role in a group (API.md "Groups"): the owner manages everything, admins manage
/// members and alerts, members take part. Stored and sent as its name.
public struct Role: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }

    public static let owner = Role("owner")
    public static let admin = Role("admin")
    public static let member = Role("member")

    /// The roles a request may name (`owner` changes hands only by a transfer).
    public static let all: [Role] = [.owner, .admin, .member]

    /// Owners and admins: they close others' alerts and manage members.
    public var isManager: Bool { self == .owner || self == .admin }

    public var description: String { name }
}
