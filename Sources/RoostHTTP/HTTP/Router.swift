import Foundation
import RoostProtocol

/// What a handler receives: the request plus what routing learned about it.
public struct RequestContext: Sendable {
    public let request: HTTPRequest
    /// The route pattern that matched (`/v1/groups/{gid}`), for logs and metrics.
    public let route: String
    public let parameters: RouteParameters
    public let requestID: String
    public let peer: String
    /// The body, for a route added with `streamedBody: true` (`request.body` is then empty).
    public var bodyStream: RequestBodyStream? = nil
}

/// Path parameters, already checked against their declared type.
public struct RouteParameters: Sendable {
    var values: [String: String] = [:]

    public subscript(_ name: String) -> String? { values[name] }

    /// A `{name:uuid}` parameter (the router guarantees it parses).
    public func uuid(_ name: String) -> UUID? { values[name].flatMap(UUID.init(text:)) }

    /// A `{name:int}` parameter.
    public func int(_ name: String) -> Int64? { values[name].flatMap { Int64($0) } }
}

/// A handler: throws `APIError` for a client-facing failure; anything else becomes a logged 500.
public typealias RouteHandler = @Sendable (RequestContext) async throws -> HTTPResponse

/// A handler that runs on the event loop itself: it must be constant-time and never block
/// (health checks), since the loop serves every other connection meanwhile.
public typealias InlineHandler = @Sendable (RequestContext) -> HTTPResponse

/// Routes compiled into an immutable trie of path segments (hummingbird's shape): literal
/// segments first, then one typed parameter per node. An unknown path is 404; a known path
/// with another method is 405 with `Allow`.
public struct Router: Sendable {
    public enum Match {
        case found(RouteHandler, pattern: String, parameters: RouteParameters, bodyLimit: Int?)
        case webSocket(WebSocketAcceptor, pattern: String, parameters: RouteParameters)
        case inline(InlineHandler, pattern: String, parameters: RouteParameters)
        case notFound
        case methodNotAllowed(allowed: [HTTPMethod])
    }

    fileprivate enum ParameterType: String, Sendable {
        case string, uuid, int

        func accepts(_ value: String) -> Bool {
            switch self {
            case .string: return !value.isEmpty
            case .uuid: return UUID(text: value) != nil
            case .int: return Int64(value).map { $0 >= 0 } ?? false
            }
        }
    }

    fileprivate struct Route: Sendable {
        let handler: RouteHandler
        let pattern: String
        let bodyLimit: Int?
        /// The body reaches the handler in pieces (`RequestContext.bodyStream`).
        var streamedBody = false
        /// Set for WebSocket endpoints: the request is an upgrade, not a call.
        var acceptor: WebSocketAcceptor?
        /// Set for routes answered on the event loop.
        var inline: InlineHandler?
    }

    fileprivate final class Node: Sendable {
        let literals: [String: Node]
        let parameter: (name: String, type: ParameterType, node: Node)?
        let routes: [HTTPMethod: Route]

        init(literals: [String: Node], parameter: (name: String, type: ParameterType, node: Node)?, routes: [HTTPMethod: Route]) {
            self.literals = literals
            self.parameter = parameter
            self.routes = routes
        }
    }

    private let root: Node
    public let patterns: [(method: HTTPMethod, pattern: String)]
    /// Path prefixes whose rest is a secret (a bridge's hook URL): never written to a log.
    private var secretPrefixes: [String] = []

    /// The path as a log may show it: the rest of a secret path is `[secret]`.
    public func loggable(_ path: String) -> String {
        guard let prefix = secretPrefixes.first(where: { path.hasPrefix($0) }) else { return path }
        return prefix + "[secret]"
    }

    /// Whether the route `method` and `segments` lead to takes its body in pieces.
    public func streamsBody(_ method: HTTPMethod, _ segments: [String]) -> Bool {
        guard let node = node(segments) else { return false }
        return node.routes[method]?.streamedBody ?? false
    }

    private func node(_ segments: [String]) -> Node? {
        var node = root
        for segment in segments {
            if let next = node.literals[segment] {
                node = next
            } else if let parameter = node.parameter, parameter.type.accepts(segment) {
                node = parameter.node
            } else {
                return nil
            }
        }
        return node
    }

    public func match(_ method: HTTPMethod, _ segments: [String]) -> Match {
        var node = root
        var parameters = RouteParameters()
        for segment in segments {
            if let next = node.literals[segment] {
                node = next
            } else if let parameter = node.parameter, parameter.type.accepts(segment) {
                parameters.values[parameter.name] = segment
                node = parameter.node
            } else {
                return .notFound
            }
        }
        let lookup = method == .head ? (node.routes[.head] ?? node.routes[.get]) : node.routes[method]
        if let route = lookup {
            if let acceptor = route.acceptor { return .webSocket(acceptor, pattern: route.pattern, parameters: parameters) }
            if let inline = route.inline { return .inline(inline, pattern: route.pattern, parameters: parameters) }
            return .found(route.handler, pattern: route.pattern, parameters: parameters, bodyLimit: route.bodyLimit)
        }
        if node.routes.isEmpty { return .notFound }
        return .methodNotAllowed(allowed: node.routes.keys.map(\.rawValue).sorted().map(HTTPMethod.init))
    }

    /// Collects routes, then `build()` compiles them.
    public struct Builder {
        private final class MutableNode {
            var literals: [String: MutableNode] = [:]
            var parameter: (name: String, type: ParameterType, node: MutableNode)?
            var routes: [HTTPMethod: Route] = [:]

            func freeze() -> Node {
                Node(
                    literals: literals.mapValues { $0.freeze() },
                    parameter: parameter.map { ($0.name, $0.type, $0.node.freeze()) },
                    routes: routes)
            }
        }

        private let root = MutableNode()
        private var patterns: [(HTTPMethod, String)] = []
        private var secretPrefixes: [String] = []

        public init() {}

        /// Adds `pattern` such as `/v1/groups/{gid:uuid}/alerts/{seq:int}/ack`.
        /// A conflicting route is a programming error and traps at start-up.
        /// `streamedBody`: the handler takes the body in pieces as it arrives
        /// (`RequestContext.bodyStream`), up to `bodyLimit` bytes in all.
        public mutating func add(_ method: HTTPMethod, _ pattern: String, bodyLimit: Int? = nil, streamedBody: Bool = false,
                                 _ handler: @escaping RouteHandler) {
            insert(method, pattern, Route(handler: handler, pattern: pattern, bodyLimit: bodyLimit, streamedBody: streamedBody))
        }

        /// A route answered on the event loop without a hop to the handler pool. Only for
        /// constant-time work that never blocks (`/healthz`).
        public mutating func addInline(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping InlineHandler) {
            insert(method, pattern, Route(handler: { handler($0) }, pattern: pattern, bodyLimit: nil, inline: handler))
        }

        /// A WebSocket endpoint: `GET pattern` with `Upgrade: websocket` becomes a session.
        public mutating func addWebSocket(_ pattern: String, _ acceptor: @escaping WebSocketAcceptor) {
            let refuse: RouteHandler = { _ in
                throw APIError(.upgradeRequired, code: .upgradeRequired, message: "this endpoint needs Upgrade: websocket",
                               headers: ["Upgrade": "websocket", "Connection": "Upgrade"])
            }
            insert(.get, pattern, Route(handler: refuse, pattern: pattern, bodyLimit: 0, acceptor: acceptor))
        }

        private mutating func insert(_ method: HTTPMethod, _ pattern: String, _ route: Route) {
            var node = root
            for segment in pattern.split(separator: "/") {
                if segment.hasPrefix("{") && segment.hasSuffix("}") {
                    let inner = segment.dropFirst().dropLast().split(separator: ":")
                    let name = String(inner[0])
                    guard let type = ParameterType(rawValue: inner.count > 1 ? String(inner[1]) : "string") else {
                        preconditionFailure("route \(pattern): unknown parameter type in \(segment)")
                    }
                    if let existing = node.parameter {
                        precondition(existing.name == name && existing.type == type, "route \(pattern) conflicts at \(segment)")
                        node = existing.node
                    } else {
                        let next = MutableNode()
                        node.parameter = (name, type, next)
                        node = next
                    }
                } else {
                    let literal = String(segment)
                    if let next = node.literals[literal] {
                        node = next
                    } else {
                        let next = MutableNode()
                        node.literals[literal] = next
                        node = next
                    }
                }
            }
            precondition(node.routes[method] == nil, "route \(method) \(pattern) is defined twice")
            node.routes[method] = route
            patterns.append((method, pattern))
        }

        /// Paths under `prefix` carry a secret after it (`/v1/bridge/hooks/`): a request for one
        /// that no route answers is logged without it.
        public mutating func secretPaths(under prefix: String) {
            secretPrefixes.append(prefix)
        }

        public func build() -> Router {
            var router = Router(root: root.freeze(), patterns: patterns)
            router.secretPrefixes = secretPrefixes
            return router
        }
    }
}
