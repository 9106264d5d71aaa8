import Foundation
import RoostProtocol

/// A predefined message members can post with one tap.
public struct MessageTemplate: Sendable, Equatable, Codable {
    public let key: String
    public let text: String
    public let kind: MessageKind
    public let severity: String?

    public init(key: String, text: String, kind: MessageKind, severity: String?) {
        self.key = key
        self.text = text
        self.kind = kind
        self.severity = severity
    }
}

/// A group's templates, in a tenant transaction.
public struct TemplateStore: Sendable {
    public init() {}

    /// What every new group starts with.
    public static let defaults: [MessageTemplate] = [
        MessageTemplate(key: "alarm", text: "Alarm going off at my house", kind: .alert, severity: "red"),
        MessageTemplate(key: "break_in", text: "Someone is breaking in", kind: .alert, severity: "red"),
        MessageTemplate(key: "suspicious_person", text: "Suspicious person", kind: .alert, severity: "amber"),
        MessageTemplate(key: "suspicious_vehicle", text: "Suspicious vehicle", kind: .alert, severity: "amber"),
        MessageTemplate(key: "check_my_house", text: "Can someone check on my house?", kind: .alert, severity: "amber"),
        MessageTemplate(key: "all_clear", text: "All clear", kind: .chat, severity: nil),
    ]

    public func list(group: UUID, on connection: PostgresConnection) throws -> [MessageTemplate] {
        try connection.query("""
            SELECT key, text, kind, severity FROM templates WHERE group_id = \(group) ORDER BY position, key
            """).rows.map {
            MessageTemplate(key: try $0.decode(String.self, "key"), text: try $0.decode(String.self, "text"),
                            kind: try $0.decode(MessageKind.self, "kind"), severity: try $0.decode(String?.self, "severity"))
        }
    }

    public func template(group: UUID, key: String, on connection: PostgresConnection) throws -> MessageTemplate? {
        try list(group: group, on: connection).first { $0.key == key }
    }

    /// Replaces the whole set.
    public func replace(tenant: UUID, group: UUID, with templates: [MessageTemplate], on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM templates WHERE group_id = \(group)")
        for (position, template) in templates.enumerated() {
            try connection.query("""
                INSERT INTO templates (tenant_id, group_id, key, position, text, kind, severity)
                VALUES (\(tenant), \(group), \(template.key), \(position), \(template.text), \(template.kind), \(template.severity))
                """)
        }
    }
}
