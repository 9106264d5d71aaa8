import Foundation

/// The small template language of `templates/<locale>/*` (rendered email and Web Push text):
/// `{{a.b}}` puts the value at that path of the data (HTML-escaped when the template is
/// HTML), `{{#a.b}}…{{/a.b}}` keeps its inside when the value is there and not null, false,
/// 0 or empty, `{{^a.b}}…{{/a.b}}` when it is not. Nothing else: no loops, no code, so an
/// operator's template can't do more than show the data it is given.
public struct TextTemplate: Sendable {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case unclosed(String)
        case unexpectedClose(String)
        case unterminatedTag

        public var description: String {
            switch self {
            case .unclosed(let name): "the section {{#\(name)}} is not closed"
            case .unexpectedClose(let name): "{{/\(name)}} closes nothing open"
            case .unterminatedTag: "a {{ has no }}"
            }
        }
    }

    indirect enum Node: Sendable {
        case text(String)
        case value(String)
        case section(String, inverted: Bool, [Node])
    }

    let nodes: [Node]
    public let escapesHTML: Bool

    public init(_ source: String, escapesHTML: Bool = false) throws(Failure) {
        self.escapesHTML = escapesHTML
        var stack: [(name: String, inverted: Bool, nodes: [Node])] = [("", false, [])]
        var rest = Substring(source)
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { stack[stack.count - 1].nodes.append(.text(String(rest[..<open.lowerBound]))) }
            guard let close = rest[open.upperBound...].range(of: "}}") else { throw .unterminatedTag }
            let tag = rest[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespaces)
            rest = rest[close.upperBound...]
            if tag.hasPrefix("#") || tag.hasPrefix("^") {
                stack.append((String(tag.dropFirst()).trimmingCharacters(in: .whitespaces), tag.hasPrefix("^"), []))
            } else if tag.hasPrefix("/") {
                let name = String(tag.dropFirst()).trimmingCharacters(in: .whitespaces)
                guard stack.count > 1, stack[stack.count - 1].name == name else { throw .unexpectedClose(name) }
                let done = stack.removeLast()
                stack[stack.count - 1].nodes.append(.section(done.name, inverted: done.inverted, done.nodes))
            } else {
                stack[stack.count - 1].nodes.append(.value(tag))
            }
        }
        if !rest.isEmpty { stack[stack.count - 1].nodes.append(.text(String(rest))) }
        guard stack.count == 1 else { throw .unclosed(stack[stack.count - 1].name) }
        nodes = stack[0].nodes
    }

    /// The text with `data` (a JSON object as `JSONSerialization` reads it) filled in.
    public func render(_ data: [String: Any]) -> String {
        var out = ""
        render(nodes, data, into: &out)
        return out
    }

    private func render(_ nodes: [Node], _ data: [String: Any], into out: inout String) {
        for node in nodes {
            switch node {
            case .text(let text): out += text
            case .value(let path):
                let shown = Self.text(Self.lookup(path, in: data))
                out += escapesHTML ? Self.escapeHTML(shown) : shown
            case .section(let path, let inverted, let inside):
                if Self.isPresent(Self.lookup(path, in: data)) != inverted { render(inside, data, into: &out) }
            }
        }
    }

    static func lookup(_ path: String, in data: [String: Any]) -> Any? {
        var current: Any? = data
        for key in path.split(separator: ".") {
            guard let object = current as? [String: Any] else { return nil }
            current = object[String(key)]
        }
        return current
    }

    static func isPresent(_ value: Any?) -> Bool {
        switch value {
        case nil, is NSNull: false
        case let number as NSNumber: number != 0
        case let text as String: !text.isEmpty
        case let array as [Any]: !array.isEmpty
        default: true
        }
    }

    static func text(_ value: Any?) -> String {
        switch value {
        case nil, is NSNull: ""
        case let text as String: text
        case let number as NSNumber: "\(number)"
        default: ""
        }
    }

    public static func escapeHTML(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
