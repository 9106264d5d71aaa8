import Foundation
import RoostProtocol
import Synchronization

/// The network limits of DESIGN.md ("Limits every connection lives under"), all configurable.
public struct NetworkLimits: Sendable {
    public var maxHeaderBytes = 16 * 1024
    public var maxRequestLineBytes = 8 * 1024
    public var maxBodyBytes = 64 * 1024
    public var headerTimeoutMilliseconds = 10_000
    public var idleTimeoutMilliseconds = 60_000
    public var maxConnections = 200_000
    /// Requests of one connection being handled at once (pipelining depth); reading pauses beyond.
    public var maxPipelinedRequests = 16
    /// Handlers running at once on the node; beyond, requests get 503 with Retry-After.
    public var maxConcurrentHandlers = 1024
    /// Streamed uploads at once on the node, in slots of their own: uploads waiting on slow
    /// clients never take the handlers every other request needs. Beyond, 503.
    public var maxConcurrentUploads = 256
    /// An upload averaging less than this over `uploadRateWindowMilliseconds` is cut with 408
    /// (0: no minimum).
    public var minUploadBytesPerSecond = 8 * 1024
    public var uploadRateWindowMilliseconds = 30_000
    public var shutdownGraceMilliseconds = 10_000
    /// Connections from one client address (TCP); beyond, 503 and close. 0: no limit.
    public var maxConnectionsPerAddress = 20_000
    /// A WebSocket message after reassembly: 1009 beyond.
    public var maxWebSocketMessageBytes = 64 * 1024
    public var pingIntervalMilliseconds = 30_000
    /// No pong this long after a ping: close 1001.
    public var pongTimeoutMilliseconds = 60_000
    /// Bytes queued for one WebSocket client: beyond, it has fallen behind and is closed with 1013.
    public var maxOutboundQueueBytes = 1024 * 1024
    /// How long the peer may take to answer our close frame before the socket is closed.
    public var closeTimeoutMilliseconds = 5_000
    /// Frames a loop writes for WebSocket sends in one turn before it serves its sockets, timers
    /// and hand-overs again: an alert to 10,000 members on one loop is about 40 turns of 2 ms
    /// (at 7.5 µs a frame on loopback), not one stall of 75 ms for every other connection there.
    public var framesPerLoopTurn = 256
    public init() {}
}

/// Turns an error the transport does not know into an API error, or nil for a 500.
public typealias ErrorMapper = @Sendable (any Error) -> APIError?

/// What every connection of a server shares: routing, limits, the handler gate, counters.
final class ServerContext: Sendable {
    let router: Router
    let limits: NetworkLimits
    let log: Log
    /// Told of every answered request, in order: the metrics, the access log when on, then the application's.
    let observers: [any RequestObserver]
    /// The application's word on errors the transport does not know (a database that is away →
    /// 503, say); nil leaves the error a logged 500.
    let errorMapper: ErrorMapper
    let openConnections = Atomic<Int>(0)
    let runningHandlers = Atomic<Int>(0)
    let runningUploads = Atomic<Int>(0)
    let requestsServed = Atomic<Int>(0)
    /// Bytes written from the connections' outbound queues (`flush`): every HTTP response byte,
    /// and the WebSocket frames that waited in a queue (a frame sent at once is not counted here).
    let bytesWritten = Atomic<Int>(0)
    let shuttingDown = Atomic<Bool>(false)
    let metrics = ServerMetrics()
    private let connectionsByAddress = Mutex<[String: Int]>([:])
    private let date = Mutex<(second: Int64, text: String)>((0, ""))

    init(router: Router, limits: NetworkLimits, log: Log, accessLog: Bool, observers: [any RequestObserver] = [],
         errorMapper: @escaping ErrorMapper) {
        self.router = router
        self.limits = limits
        self.log = log
        self.observers = [RequestMetrics(metrics: metrics)] + (accessLog ? [AccessLog(log: log)] : []) + observers
        self.errorMapper = errorMapper
    }

    /// A request was answered: counted, and told to every observer.
    func completed(_ request: CompletedRequest) {
        requestsServed.add(1, ordering: .relaxed)
        for observer in observers { observer.completed(request) }
    }

    /// What a handler's error answers: an `APIError` as itself, what the application maps as
    /// that, anything else a logged 500 (a 500 is a bug).
    func apiError(for error: any Error, in request: RequestContext) -> APIError {
        if let error = error as? APIError { return error }
        if let mapped = errorMapper(error) { return mapped }
        log.error("handler failed", ["route": request.route, "request_id": request.requestID, "error": "\(error)"])
        return APIError(.internalServerError, code: .internal, message: "something went wrong on our side (request \(request.requestID))")
    }

    /// The `Date` header value, formatted at most once a second.
    var httpDate: String {
        let second = Int64(Date().timeIntervalSince1970)
        return date.withLock { cached in
            if cached.second != second { cached = (second, HTTPDate.format(secondsSince1970: second)) }
            return cached.text
        }
    }

    /// Counts a new connection from `address`; false when that address is at its limit.
    func admit(_ address: String) -> Bool {
        guard limits.maxConnectionsPerAddress > 0, address != "unix" else { return true }
        return connectionsByAddress.withLock { counts in
            let count = counts[address, default: 0]
            guard count < limits.maxConnectionsPerAddress else { return false }
            counts[address] = count + 1
            return true
        }
    }

    /// A connection this server accepted closed: its counts and its address's share go.
    func closed(_ connection: HTTPConnection) {
        openConnections.subtract(1, ordering: .relaxed)
        release(connection.peer)
        if connection.wasWebSocket {
            metrics.webSocketConnections.subtract(1, ordering: .relaxed)
        } else {
            metrics.httpConnections.subtract(1, ordering: .relaxed)
        }
    }

    func release(_ address: String) {
        guard limits.maxConnectionsPerAddress > 0, address != "unix" else { return }
        connectionsByAddress.withLock { counts in
            let remaining = counts[address, default: 1] - 1
            counts[address] = remaining > 0 ? remaining : nil
        }
    }

    /// Which gate a handler runs under: an ordinary request's, or a streamed upload's.
    enum Slot: Sendable {
        case handler
        case upload
    }

    /// Takes a slot of its kind, or refuses when the node has none left.
    func enter(_ slot: Slot) -> Bool {
        switch slot {
        case .handler: Self.take(runningHandlers, limit: limits.maxConcurrentHandlers)
        case .upload: Self.take(runningUploads, limit: limits.maxConcurrentUploads)
        }
    }

    func exit(_ slot: Slot) {
        switch slot {
        case .handler: runningHandlers.subtract(1, ordering: .relaxed)
        case .upload: runningUploads.subtract(1, ordering: .relaxed)
        }
    }

    private static func take(_ counter: borrowing Atomic<Int>, limit: Int) -> Bool {
        guard counter.add(1, ordering: .relaxed).newValue > limit else { return true }
        counter.subtract(1, ordering: .relaxed)
        return false
    }

    var parserLimits: HTTPRequestParser.Limits {
        var parser = HTTPRequestParser.Limits()
        parser.maxHeaderBytes = limits.maxHeaderBytes
        parser.maxRequestLineBytes = limits.maxRequestLineBytes
        parser.maxBodyBytes = limits.maxBodyBytes
        let router = self.router
        let fallback = limits.maxBodyBytes
        parser.bodyLimit = { head in
            if case .found(_, _, _, let limit?) = router.match(head.method, head.target.pathSegments) { return limit }
            return fallback
        }
        parser.streamsBody = { head in router.streamsBody(head.method, head.target.pathSegments) }
        return parser
    }
}

/// Carries a loop-confined object into a closure that will run on that same loop.
///
/// `@unchecked Sendable`: the value is only ever touched inside `EventLoop.execute` closures of
/// the loop that owns it, so it never runs on two threads at once.
struct LoopBound<Value: AnyObject>: @unchecked Sendable {
    let value: Value
}
