import Foundation
import RoostProtocol

#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 connection, confined to its event loop.
///
/// Requests are parsed as bytes arrive and handed to their handlers off the loop; responses
/// are written in request order however the handlers finish (pipelining, `ResponseQueue`).
/// Deadlines (`ConnectionDeadline`): a request's header section must arrive within the header
/// timeout once its first byte has (slowloris), output must be read within the idle timeout,
/// and an idle keep-alive connection closes after the idle timeout. What happens to each
/// finished request (metrics, the access log) is the server's `RequestObserver`s' business.
final class HTTPConnection: EventHandler {
    let fd: Int32
    /// The loop's registration of `fd` (`EventLoop.register`), which names it in a tick.
    private(set) var generation: UInt32 = 0
    // The one-byte fields together here, in what would be padding (a class's fields keep their
    // order): an idle stream is every byte of this object.
    /// What is still read and when the connection ends (`ConnectionLifecycle`).
    private(set) var lifecycle = ConnectionLifecycle.open
    private var waitingForWritable = false
    /// True while `readAvailable`/`processRequests` run, so a response finished inside them
    /// (an inline route) does not start another round: pipelined requests are taken in a
    /// loop, never by nesting calls.
    private var processing = false
    private var deadlineKind: ConnectionDeadline?
    let peer: String
    unowned let loop: EventLoop
    let context: ServerContext

    /// What only an HTTP connection needs, boxed: a connection that becomes a WebSocket lets go
    /// of it (the parser's inline state and buffers, the response queue and its table, streamed
    /// bodies, the upload), a few hundred bytes of every idle stream.
    final class HTTPState {
        var parser: HTTPRequestParser
        var responses = ResponseQueue()
        /// The session of an accepted upgrade, until its 101 is written.
        var pendingUpgrade: WebSocketSession?
        /// Streamed bodies whose heads wait for earlier responses, by response number.
        var waitingStreams: [Int: ResponseStream] = [:]
        /// The streamed body being written (`HTTPConnection+Stream.swift`), and whether a piece
        /// of it is being fetched.
        var activeStream: ResponseStream?
        var fetchingPiece = false
        /// The request body being streamed to its handler (`HTTPConnection+Upload.swift`).
        var upload: Upload?

        init(_ parser: HTTPRequestParser) { self.parser = parser }
    }

    /// What the connection is: each mode holds what only it needs.
    enum Mode {
        /// Reading and answering requests.
        case http(HTTPState)
        /// An upgrade request was taken: no more requests are read; the bytes after it wait in
        /// the parser for the WebSocket, once the acceptor has answered and the 101 is written.
        case upgrading(HTTPState)
        /// Switched protocols (see HTTPConnection+WebSocket.swift).
        case webSocket(WebSocketChannel)
        case closed(wasWebSocket: Bool)
    }
    private(set) var mode: Mode

    var outbound = OutboundBuffer()
    /// The queue size last added to the server-wide gauge.
    private var reportedQueueBytes = 0
    /// The running deadline's timer (`deadlineKind` says which it is; its token is 0 when none runs).
    private var deadlineToken: UInt64 = 0
    private var deadline: (token: UInt64, kind: ConnectionDeadline)? {
        get { deadlineKind.map { (deadlineToken, $0) } }
        set {
            deadlineKind = newValue?.kind
            deadlineToken = newValue?.token ?? 0
        }
    }

    var http: HTTPState? {
        switch mode {
        case .http(let parser), .upgrading(let parser): parser
        case .webSocket, .closed: nil
        }
    }

    var webSocket: WebSocketChannel? {
        if case .webSocket(let state) = mode { state } else { nil }
    }

    var isClosed: Bool {
        if case .closed = mode { true } else { false }
    }

    /// Whether the connection had switched to WebSocket (for the metrics of its kind).
    var wasWebSocket: Bool {
        switch mode {
        case .webSocket, .closed(wasWebSocket: true): true
        default: false
        }
    }

    init(fd: Int32, peer: String, loop: EventLoop, context: ServerContext) {
        self.fd = fd
        self.peer = peer
        self.loop = loop
        self.context = context
        self.mode = .http(HTTPState(HTTPRequestParser(limits: context.parserLimits)))
    }

    func start() throws {
        generation = try loop.register(fd, self)
        rearmDeadline()
    }

    func handleEvent(readable: Bool, writable: Bool) {
        if writable && waitingForWritable {
            flush()
            resumeRequests()
        }
        guard readable && !isClosed else { return }
        if webSocket != nil {
            readWebSocket()
        } else if lifecycle.readsInput {
            readAvailable()
        }
    }

    // MARK: - Reading

    private func readAvailable() {
        guard !processing else { return }
        processing = true
        defer { processing = false }
        // At most 16 reads (1 MiB) per wake-up: epoll is level-triggered and calls again, so one
        // busy connection cannot hold the loop that serves thousands of others.
        var budget = 16
        while !isClosed && lifecycle.readsInput && wantsMoreRequests && budget > 0 {
            budget -= 1
            let result: IOResult<Int>
            do {
                result = try loop.readBuffer.read(fd) { [http] in http?.parser.feed($0) }
            } catch {
                close()
                return
            }
            guard case .done(let count) = result else { break }
            if count == 0 {
                // The peer finished sending: answer what it asked, then close.
                advance(.peerFinished)
                endUpload(failing: APIError(.badRequest, code: .invalidRequest, message: "the connection ended before the request body did"))
                break
            }
            processRequests()
        }
        updateInterest()
        closeIfDone()
        rearmDeadline()
    }

    /// Whether to take more requests now: not beyond the pipelining depth, and not while a
    /// client that is not reading has more than a queue's worth of answers waiting.
    private var wantsMoreRequests: Bool {
        guard let http else { return false }
        if let upload = http.upload { return !upload.paused }  // a streaming body is read as its handler takes it
        return http.responses.inFlight < context.limits.maxPipelinedRequests && outbound.byteCount <= context.limits.maxOutboundQueueBytes
    }

    private func processRequests() {
        guard let http else { return }
        while lifecycle.readsInput && wantsMoreRequests {
            switch http.parser.next() {
            case .needMore:
                http.parser.releaseIdleBuffers()
                return
            case .failure(let error):
                advance(.malformed)
                // A body that breaks while its handler takes it is the handler's to answer.
                guard http.upload == nil else {
                    endUpload(failing: error.apiError)
                    return
                }
                respondImmediately(HTTPResponse(error.apiError), keepAlive: false, started: loop.now, method: "-", route: "-", requestID: newRequestID())
                return
            case .request(let request):
                dispatch(request)
            case .streamStart(let request):
                dispatch(request, streamingBody: true)
            case .bodyPart(let part):
                receivedUploadPart(part)
            case .bodyEnd:
                endUpload(failing: nil)
                advance(.bodyEnded)  // when it was the connection's last request, nothing more is read
            }
        }
    }

    /// Takes up requests again after a pause (pipelining depth reached, or output backed up):
    /// first those already buffered, then the socket. Not from inside the processing loop,
    /// which continues by itself (so responses finished inline never nest calls).
    func resumeRequests() {
        guard !processing && lifecycle.readsInput && !isClosed && webSocket == nil else { return }
        processing = true
        processRequests()
        processing = false
        if lifecycle.readsInput && wantsMoreRequests { readAvailable() }
    }

    private func dispatch(_ request: HTTPRequest, streamingBody: Bool = false) {
        guard let http else { return }
        let started = loop.now
        let keepAlive = request.keepAlive && !context.shuttingDown.load(ordering: .relaxed)
        if !keepAlive {
            // The last request: nothing after it is read, but a streaming body of its own is (until `bodyEnd`).
            advance(.lastRequest(streamingBody: streamingBody))
        }
        let requestID = Self.acceptedRequestID(request.headers["X-Request-Id"]) ?? newRequestID()
        switch context.router.match(request.method, request.target.pathSegments) {
        case .notFound:
            let error = APIError(.notFound, code: .notFound, message: "no such resource: \(request.target.path)")
            respondImmediately(HTTPResponse(error), keepAlive: keepAlive, started: started, method: request.method.rawValue, route: "-", requestID: requestID,
                               path: request.target.path)
        case .methodNotAllowed(let allowed):
            let names = allowed.map(\.rawValue).joined(separator: ", ")
            let error = APIError(.methodNotAllowed, code: .methodNotAllowed, message: "\(request.method) is not allowed here; use \(names)", headers: ["Allow": names])
            respondImmediately(HTTPResponse(error), keepAlive: keepAlive, started: started, method: request.method.rawValue, route: "-", requestID: requestID,
                               path: request.target.path)
        case .inline(let handler, let pattern, let parameters):
            let requestContext = RequestContext(request: request, route: pattern, parameters: parameters, requestID: requestID, peer: peer)
            respondImmediately(handler(requestContext), keepAlive: keepAlive, started: started, method: request.method.rawValue, route: pattern, requestID: requestID)
        case .webSocket(let acceptor, let pattern, let parameters):
            let requestContext = RequestContext(request: request, route: pattern, parameters: parameters, requestID: requestID, peer: peer)
            beginUpgrade(requestContext, acceptor: acceptor, started: started)
        case .found(let handler, let pattern, let parameters, _):
            let slot: ServerContext.Slot = streamingBody ? .upload : .handler
            guard context.enter(slot) else {
                let error = APIError(.serviceUnavailable, code: .unavailable,
                                     message: slot == .upload ? "the server takes no more uploads at the moment; try again shortly" : "the server is busy; try again shortly",
                                     headers: ["Retry-After": "1"])
                respondImmediately(HTTPResponse(error), keepAlive: keepAlive, started: started, method: request.method.rawValue, route: pattern, requestID: requestID)
                return
            }
            let number = http.responses.take()
            var requestContext = RequestContext(request: request, route: pattern, parameters: parameters, requestID: requestID, peer: peer)
            if streamingBody {
                // `100 Continue` only when nothing is owed before it, so responses keep their order.
                let continueOwed = request.headers["Expect"]?.lowercased() == "100-continue" && http.responses.inFlight == 1 && outbound.isEmpty
                requestContext.bodyStream = beginUpload(number, continueOwed: continueOwed)
            }
            let bound = LoopBound(value: self)
            let loop = self.loop
            let isHead = request.method == .head
            let method = request.method.rawValue
            Self.spawn(handler, requestContext, server: context, slot: slot) { response in
                loop.execute {
                    bound.value.finish(number, response, keepAlive: keepAlive, isHead: isHead, started: started, method: method, route: pattern, requestID: requestID)
                }
            }
        }
    }

    /// Runs the handler as a task off the loop and reports its response.
    private static func spawn(
        _ handler: @escaping RouteHandler, _ requestContext: RequestContext, server: ServerContext, slot: ServerContext.Slot,
        completion: @escaping @Sendable (HTTPResponse) -> Void
    ) {
        Task {
            let response = await run(handler, requestContext, server: server)
            server.exit(slot)
            completion(response)
        }
    }

    /// Runs a handler, turning its errors into responses (`ServerContext.apiError(for:in:)`).
    private static func run(_ handler: RouteHandler, _ context: RequestContext, server: ServerContext) async -> HTTPResponse {
        do {
            return try await handler(context)
        } catch {
            return HTTPResponse(server.apiError(for: error, in: context))
        }
    }

    /// The mode after an accepted upgrade's 101: the parser's leftover bytes go to the WebSocket.
    func switchMode(to state: WebSocketChannel) {
        mode = .webSocket(state)
        context.metrics.httpConnections.subtract(1, ordering: .relaxed)
        context.metrics.webSocketConnections.add(1, ordering: .relaxed)
    }

    /// An upgrade request was taken: no more HTTP requests are read.
    func beginUpgrading() {
        if case .http(let parser) = mode { mode = .upgrading(parser) }
        advance(.upgradeTaken)
    }

    /// Moves the lifecycle on (`ConnectionLifecycle.after`).
    func advance(_ event: ConnectionLifecycle.Event) {
        lifecycle = lifecycle.after(event)
    }

    /// `path`: the request's path, for a request no route matched (its log line says what was asked for).
    func respondImmediately(_ response: HTTPResponse, keepAlive: Bool, started: UInt64, method: String, route: String, requestID: String,
                            path: String? = nil) {
        guard let http else { return }
        finish(http.responses.take(), response, keepAlive: keepAlive, isHead: method == "HEAD", started: started, method: method, route: route,
               requestID: requestID, path: path)
    }

    /// A response is ready: queue it behind earlier ones and write what can be written.
    func finish(
        _ number: Int, _ response: HTTPResponse, keepAlive: Bool, isHead: Bool, started: UInt64,
        method: String, route: String, requestID: String, path: String? = nil
    ) {
        // A closed connection let go of its responses with the rest of its HTTP state.
        guard !isClosed, let http else { return }
        // Answered before its body was all read (refused, say): the rest is not read.
        if let upload = http.upload, upload.number == number {
            endUpload(failing: APIError(.badRequest, code: .invalidRequest, message: "the request was answered before its body ended"))
            advance(.finalResponse)
        }
        // A response finished during shutdown is the connection's last.
        let keepAlive = keepAlive && !context.shuttingDown.load(ordering: .relaxed)
        if !keepAlive { advance(.finalResponse) }
        var response = response
        response.headers.replace("X-Request-Id", requestID)
        var bytes: [UInt8] = []
        HTTPResponseWriter.write(response, keepAlive: keepAlive, date: context.httpDate, includeBody: !isHead, into: &bytes)
        context.completed(CompletedRequest(requestID: requestID, method: method, route: route, status: response.status.code,
                                           nanoseconds: loop.clock.now() - started, bodyBytes: response.body.count, peer: peer,
                                           path: path.map { String(context.router.loggable($0).prefix(200)) }))
        let streamed = response.stream != nil && !isHead
        if streamed { http.waitingStreams[number] = response.stream }
        guard apply(http.responses.finish(number, bytes, streamed: streamed), of: http) else { return }
        flush()
        resumeRequests()
        closeIfDone()
        rearmDeadline()
    }

    /// Carries out what the response queue released; false when the connection left HTTP.
    func apply(_ releases: [ResponseQueue.Release], of http: HTTPState) -> Bool {
        for release in releases {
            switch release {
            case .write(let bytes):
                outbound.append(bytes)
            case .switchProtocols:
                guard let session = http.pendingUpgrade else { continue }
                http.pendingUpgrade = nil
                enterWebSocketMode(session)
                flush()
                return false
            case .startStream(let number):
                http.activeStream = http.waitingStreams.removeValue(forKey: number)
            }
        }
        return true
    }

    // MARK: - Writing

    /// Writes straight away; EPOLLOUT is armed only while the socket would block.
    func flush() {
        guard !isClosed else { return }
        let before = outbound.byteCount
        do {
            let drained = try outbound.write(to: fd)
            waitingForWritable = !drained
            context.bytesWritten.add(before - outbound.byteCount, ordering: .relaxed)
        } catch {
            close()
            return
        }
        reportQueue()
        updateInterest()
        closeIfDone()
        pumpStream()
        // Progress on a pending write restarts its deadline (HTTP only: WebSockets have pings).
        if outbound.byteCount != before { rearmDeadline(progress: true) } else if waitingForWritable { rearmDeadline() }
    }

    /// Keeps `roost_outbound_queued_bytes` equal to the sum of every connection's queue.
    func reportQueue() {
        let delta = outbound.byteCount - reportedQueueBytes
        guard delta != 0 else { return }
        context.metrics.queuedBytes.add(delta, ordering: .relaxed)
        reportedQueueBytes = outbound.byteCount
    }

    func updateInterest() {
        guard !isClosed else { return }
        // A WebSocket always reads (pings, the peer's close); HTTP pauses at the pipelining limit.
        let wantsRead = webSocket != nil || (lifecycle.readsInput && wantsMoreRequests)
        loop.setInterest(fd, readable: wantsRead, writable: waitingForWritable)
    }

    func closeIfDone() {
        guard lifecycle.closesWhenDrained && outbound.isEmpty else { return }
        if webSocket != nil { close(); return }
        if let http, http.responses.inFlight == 0 && !http.responses.hasWaiting && !http.responses.streaming { close() }
    }

    // MARK: - Deadlines

    /// `progress`: output was just written, which restarts a running write deadline.
    private func rearmDeadline(progress: Bool = false) {
        guard !isClosed, let http else { return }
        let decision = ConnectionDeadline.decide(current: deadline?.kind, outputPending: !outbound.isEmpty,
                                                 responsesOwed: http.responses.inFlight > 0 || http.responses.streaming,
                                                 midRequest: !http.parser.isIdle, progress: progress)
        if decision == .keep { return }
        if let current = deadline {
            loop.cancelTimer(current.token)
            deadline = nil
        }
        guard case .start(let wanted) = decision else { return }
        let bound = LoopBound(value: self)
        let token = loop.schedule(afterNanoseconds: UInt64(wanted.milliseconds(context.limits)) * 1_000_000) {
            bound.value.deadline = nil
            bound.value.close()
        }
        deadline = (token, wanted)
    }

    /// Closes at once (shutdown of an idle keep-alive connection, deadline, error).
    func close() {
        guard !isClosed else { return }
        endUpload(failing: APIError(.badRequest, code: .invalidRequest, message: "the connection closed before the request body ended"))
        let webSocket = self.webSocket
        // The HTTP state goes with the mode: its streamed bodies are dropped, and a piece on its
        // way finds the connection closed.
        mode = .closed(wasWebSocket: webSocket != nil)
        if let deadline { loop.cancelTimer(deadline.token) }
        loop.deregister(fd)
        outbound.discard()
        reportQueue()
        if let webSocket {
            webSocket.cancelTimers(on: loop)
            webSocket.session.closed(code: webSocket.liveness.closeReceived)
        }
        context.closed(self)  // the server's bookkeeping; no closure a connection
        // Last: once the peer can see the close, the server's counts already say so.
        Glibc.close(fd)
    }

    /// For shutdown: close now if nothing is owed, else after the owed responses; a WebSocket
    /// gets a 1001 close frame.
    func closeGracefully() {
        if webSocket != nil {
            startClosing(.goingAway, reason: "server shutting down")
            return
        }
        // Requests already in the socket are answered (with Connection: close, since the server
        // is shutting down) rather than dropped with the connection.
        if lifecycle.readsInput && http?.responses.inFlight == 0 { readAvailable() }
        advance(.closing)
        updateInterest()
        closeIfDone()
    }

    // MARK: - Request IDs

    /// A request ID unique to this process run: a random prefix fixed at start, then the
    /// loop and a counter (cheap: no random bytes or allocation-heavy UUID per request).
    private func newRequestID() -> String {
        loop.requestCounter &+= 1
        return "\(Self.processPrefix)-\(loop.index)-\(String(loop.requestCounter, radix: 16))"
    }

    private static let processPrefix = String(UUID().lowercasedText.prefix(8))

    /// A client's X-Request-Id is echoed if it is short and plain, so logs stay clean.
    static func acceptedRequestID(_ value: String?) -> String? {
        guard let value, (1...128).contains(value.utf8.count),
              value.utf8.allSatisfy({ $0 > 32 && $0 < 127 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) else {
            return nil
        }
        return value
    }
}

/// The 64 KiB read buffer of one event loop, lent to each read in turn: an idle connection
/// holds no read buffer of its own.
final class ReadBuffer {
    private var storage = [UInt8](repeating: 0, count: 64 * 1024)

    /// Reads once into the buffer and passes the bytes read to `consume`.
    func read(_ fd: Int32, _ consume: (UnsafeRawBufferPointer) -> Void) throws(SystemError) -> IOResult<Int> {
        var result = IOResult<Int>.wouldBlock
        var failure: SystemError?
        storage.withUnsafeMutableBytes { raw in
            do throws(SystemError) {
                result = try systemCall("read") { Glibc.read(fd, raw.baseAddress, raw.count) }
            } catch {
                failure = error
            }
            if case .done(let count) = result, count > 0 {
                consume(UnsafeRawBufferPointer(rebasing: raw[0..<count]))
            }
        }
        if let failure { throw failure }
        return result
    }
}
