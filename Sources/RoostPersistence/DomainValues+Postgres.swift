import RoostProtocol

/// RoostProtocol's open-set names travel as their text: written as parameters, read back from
/// `text` columns, so the stores take and return the typed names and no name is spelt twice.
extension TemplateName: PostgresCodable {
    public static var postgresType: PostgresType { .text }
    public func postgresText() -> String? { name }
    public init(postgresText text: String) { self.init(text) }
}

extension OutboxChannel: PostgresCodable {
    public static var postgresType: PostgresType { .text }
    public func postgresText() -> String? { name }
    public init(postgresText text: String) { self.init(text) }
}

extension MessageKind: PostgresCodable {
    public static var postgresType: PostgresType { .text }
    public func postgresText() -> String? { name }
    public init(postgresText text: String) { self.init(text) }
}

extension ActorType: PostgresCodable {
    public static var postgresType: PostgresType { .text }
    public func postgresText() -> String? { name }
    public init(postgresText text: String) { self.init(text) }
}

extension AuditAction: PostgresCodable {
    public static var postgresType: PostgresType { .text }
    public func postgresText() -> String? { name }
    public init(postgresText text: String) { self.init(text) }
}
