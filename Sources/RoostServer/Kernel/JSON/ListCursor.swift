import Foundation
import RoostProtocol
import RoostPersistence

/// A list's `next`: the sort key of a page's last item, its fields joined by "." (text in
/// base64url, so a field never holds a dot), read back from `?cursor=` by the same list. Clients
/// hand it back unchanged; what it holds is the server's business (API.md "Conventions").
public struct ListCursor: Sendable {
    /// Longer than any cursor a list writes (a group name of 100 characters is the longest field).
    static let maxLength = 1024

    private let fields: [Substring]

    init(parsing text: String) {
        fields = text.split(separator: ".", omittingEmptySubsequences: false)
    }

    /// The cursor of these fields (each a number, an id or `text(_:)` of a string).
    static func write(_ fields: String...) -> String {
        fields.joined(separator: ".")
    }

    /// A string as a field: base64url without padding.
    static func text(_ value: String) -> String {
        Data(value.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    var count: Int { fields.count }

    func integer(_ index: Int) -> Int64? {
        index < fields.count ? Int64(fields[index]) : nil
    }

    func id(_ index: Int) -> UUID? {
        index < fields.count ? UUID(text: fields[index]) : nil
    }

    /// A field written by `text(_:)`; nil unless it decodes to UTF-8 without NUL (which no
    /// stored text holds and PostgreSQL refuses).
    func text(_ index: Int) -> String? {
        guard index < fields.count else { return nil }
        var base64 = fields[index].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64) else { return nil }
        guard !data.contains(0), let text = String(bytes: data, encoding: .utf8) else { return nil }
        return text
    }
}

extension ListCursor {
    /// A newest-first list's cursor: the time in microseconds and the id.
    static func write(_ position: NewestFirst) -> String {
        write(String(position.micros), position.id.lowercasedText)
    }

    var newestFirst: NewestFirst? {
        guard count == 2, let micros = integer(0), let id = id(1) else { return nil }
        return NewestFirst(micros: micros, id: id)
    }

    /// A list by name's cursor (groups): the name and the id.
    static func write(name: String, id: UUID) -> String {
        write(text(name), id.lowercasedText)
    }

    var byName: (name: String, id: UUID)? {
        guard count == 2, let name = text(0), let id = id(1) else { return nil }
        return (name, id)
    }
}
