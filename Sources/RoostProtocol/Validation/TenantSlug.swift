/// A tenant's slug (API.md "Tenants"): 2 to 40 of `a-z`, `0-9` and `-`. Sign-in, registration,
/// tenant discovery and the operator's routes and commands all take it; a string of the wrong
/// shape names no tenant, so nothing is looked up for it.
public struct TenantSlug: Hashable, Sendable, CustomStringConvertible {
    public let text: String

    /// The slug, or nil when `text` is not of the slug's shape.
    public init?(_ text: String) {
        guard (2...40).contains(text.utf8.count),
              text.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }) else { return nil }
        self.text = text
    }

    public static let rule = "2 to 40 of a-z, 0-9 and -"

    public var description: String { text }
}
