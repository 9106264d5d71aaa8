import RoostProtocol

/// A connection's state after `101 Switching Protocols` (RFC 6455): the payload of its
/// `.webSocket` mode, confined to the connection's loop.
final class WebSocketState {
    var reader: WebSocketReader
    let session: WebSocketSession
    let channel: WebSocketChannel
    var closeSent = false
    var closeCodeReceived: WebSocketCloseCode?
    var pingTimer: UInt64?
    var closeTimer: UInt64?
    var lastPingAt: UInt64 = 0
    var lastPongAt: UInt64 = 0

    init(reader: WebSocketReader, session: WebSocketSession, channel: WebSocketChannel) {
        self.reader = reader
        self.session = session
        self.channel = channel
    }

    func cancelTimers(on loop: EventLoop) {
        if let pingTimer { loop.cancelTimer(pingTimer) }
        if let closeTimer { loop.cancelTimer(closeTimer) }
    }
}

extension HTTPConnection {
    // MARK: - Upgrade

    /// Checks the handshake, asks the acceptor off the loop, then answers 101 or the refusal.
    func beginUpgrade(_ requestContext: RequestContext, acceptor: @escaping WebSocketAcceptor, started: UInt64) {
        let request = requestContext.request
        // Whatever follows the upgrade request belongs to the WebSocket, not to HTTP.
        beginUpgrading()
        let handshake: HTTPResponse
        switch WebSocketHandshake.accept(request) {
        case .failure(let error):
            closeWhenDrained = true
            respondImmediately(HTTPResponse(error), keepAlive: false, started: started, method: "GET", route: requestContext.route, requestID: requestContext.requestID)
            return
        case .success(let response):
            handshake = response
        }
        guard let http else { return }
        let number = http.responses.take()
        let bound = LoopBound(value: self)
        let loop = self.loop
        let server = context
        Task {
            let outcome: Result<WebSocketSession, APIError>
            do {
                outcome = .success(try await acceptor(requestContext))
            } catch {
                outcome = .failure(server.apiError(for: error, in: requestContext))
            }
            loop.execute {
                let connection = bound.value
                switch outcome {
                case .success(let session):
                    connection.http?.pendingUpgrade = session
                    connection.http?.responses.upgrade(at: number)
                    connection.finish(number, handshake, keepAlive: true, isHead: false, started: started, method: "GET",
                                      route: requestContext.route, requestID: requestContext.requestID)
                case .failure(let error):
                    connection.closeWhenDrained = true
                    connection.finish(number, HTTPResponse(error), keepAlive: false, isHead: false, started: started, method: "GET",
                                      route: requestContext.route, requestID: requestContext.requestID)
                }
            }
        }
    }

    func enterWebSocketMode(_ session: WebSocketSession) {
        var reader = WebSocketReader(role: .server, maxMessageBytes: context.limits.maxWebSocketMessageBytes)
        reader.feed(http?.parser.takeRemainingBytes() ?? [])
        // The HTTP parser and its buffers are done with.
        let channel = WebSocketChannel(loop: loop, connection: self)
        switchMode(to: WebSocketState(reader: reader, session: session, channel: channel))
        closeWhenDrained = false
        schedulePing()
        loop.setInterest(fd, readable: true, writable: false)
        session.opened(channel)
        processFrames()
    }

    // MARK: - Reading

    func readWebSocket() {
        var budget = 16  // reads per wake-up, as for HTTP: fairness between connections
        while !isClosed, webSocket != nil, budget > 0 {
            budget -= 1
            let result: IOResult<Int>
            do {
                result = try loop.readBuffer.read(fd) { webSocket!.reader.feed($0) }
            } catch {
                close()
                return
            }
            guard case .done(let count) = result else { break }
            if count == 0 {
                close()  // the peer went away without a close frame (1006 on its side)
                return
            }
            context.metrics.bytesIn.add(count, ordering: .relaxed)
            processFrames()
        }
    }

    private func processFrames() {
        while !isClosed, let state = webSocket {
            let next = webSocket!.reader.next()
            switch next {
            case .needMore:
                webSocket!.reader.releaseIdleBuffers()
                return
            case .failure(let error):
                failWebSocket(error.closeCode, reason: error.reason)
                return
            case .message(let message):
                context.metrics.framesIn.add(1, ordering: .relaxed)
                switch message {
                case .ping(let payload):
                    var frame: [UInt8] = []
                    WebSocketFrameEncoder.encode(.pong, payload: payload, into: &frame)
                    queueFrame(frame)
                case .pong:
                    webSocket!.lastPongAt = loop.now
                case .close(let code, _):
                    webSocket!.closeCodeReceived = code
                    if state.closeSent {
                        close()  // our close was answered: the handshake is complete
                    } else {
                        // Echo the code (§5.5.1), then close once it is written.
                        let reply = code.map { WebSocketFrameEncoder.close($0) } ?? [0x88, 0x00]
                        queueFrame(reply)
                        webSocket!.closeSent = true
                        closeWhenDrained = true
                        closeIfDone()
                    }
                    return
                case .binary where !state.session.acceptsBinary:
                    startClosing(.unsupportedData, reason: "binary messages are not supported")
                    return
                case .text, .binary:
                    guard !state.closeSent else { continue }
                    state.session.received(message, on: state.channel)
                }
            }
        }
    }

    // MARK: - Writing and closing

    /// Queues a frame; a client whose queue passes its bound has fallen behind and is closed with 1013.
    func queueFrame(_ frame: [UInt8]) {
        guard !isClosed, webSocket != nil else { return }
        let isClose = frame.first == 0x88
        if webSocket!.closeSent && !isClose { return }
        if isClose, frame.count >= 4 { context.metrics.recordClose(UInt16(frame[2]) << 8 | UInt16(frame[3])) }
        context.metrics.framesOut.add(1, ordering: .relaxed)
        context.metrics.bytesOut.add(frame.count, ordering: .relaxed)
        if outbound.isEmpty {
            // Write-first (most frames): one send, and EPOLLOUT only if the socket kept some back.
            do {
                if try outbound.write(frame, to: fd) {
                    closeIfDone()
                    return
                }
            } catch {
                close()
                return
            }
            flush()
            return
        }
        outbound.append(frame)
        if outbound.byteCount > context.limits.maxOutboundQueueBytes {
            outbound.discard()
            // Best effort: the socket is full, so this may not arrive; the client resumes from its cursor.
            outbound.append(WebSocketFrameEncoder.close(.tryAgainLater, reason: "client fell behind"))
            context.metrics.recordClose(WebSocketCloseCode.tryAgainLater.rawValue)
            webSocket!.closeSent = true
            flush()
            close()
            return
        }
        flush()
    }

    /// Sends our close frame and waits (bounded) for the peer's.
    func startClosing(_ code: WebSocketCloseCode, reason: String) {
        guard !isClosed, let state = webSocket, !state.closeSent else { return }
        queueFrame(WebSocketFrameEncoder.close(code, reason: reason))
        guard !isClosed else { return }
        webSocket!.closeSent = true
        let bound = LoopBound(value: self)
        webSocket!.closeTimer = loop.schedule(afterNanoseconds: UInt64(context.limits.closeTimeoutMilliseconds) * 1_000_000) {
            bound.value.close()
        }
    }

    /// A protocol error: send the close code and drop the connection once it is written.
    private func failWebSocket(_ code: WebSocketCloseCode, reason: String) {
        if !(webSocket?.closeSent ?? true) {
            queueFrame(WebSocketFrameEncoder.close(code, reason: reason))
            webSocket?.closeSent = true
        }
        closeWhenDrained = true
        closeIfDone()
    }

    // MARK: - Keep-alive

    private func schedulePing() {
        let interval = UInt64(context.limits.pingIntervalMilliseconds) * 1_000_000
        let bound = LoopBound(value: self)
        webSocket?.pingTimer = loop.schedule(afterNanoseconds: interval) { bound.value.pingTick() }
    }

    private func pingTick() {
        guard !isClosed, let state = webSocket, !state.closeSent else { return }
        let now = loop.clock.now()
        let awaitingPong = state.lastPingAt > state.lastPongAt
        if awaitingPong && now - state.lastPingAt >= UInt64(context.limits.pongTimeoutMilliseconds) * 1_000_000 {
            startClosing(.goingAway, reason: "pong timeout")
            close()
            return
        }
        if !awaitingPong {
            queueFrame([0x89, 0x00])
            webSocket?.lastPingAt = now
        }
        schedulePing()
    }
}
