import RoostProtocol

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
            advance(.finalResponse)
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
                    connection.advance(.finalResponse)
                    connection.finish(number, HTTPResponse(error), keepAlive: false, isHead: false, started: started, method: "GET",
                                      route: requestContext.route, requestID: requestContext.requestID)
                }
            }
        }
    }

    func enterWebSocketMode(_ session: WebSocketSession) {
        let remaining = http?.parser.takeRemainingBytes() ?? []
        // The HTTP parser and its buffers are done with.
        let channel = WebSocketChannel(loop: loop, connection: self, session: session,
                                       pongTimeout: UInt64(context.limits.pongTimeoutMilliseconds) * 1_000_000)
        channel.feed(remaining)
        switchMode(to: channel)
        advance(.switchedProtocols)
        schedulePing()
        loop.setInterest(fd, readable: true, writable: false)
        session.opened(channel)
        processFrames()
    }

    // MARK: - Reading

    func readWebSocket() {
        guard let state = webSocket else { return }
        var budget = 16  // reads per wake-up, as for HTTP: fairness between connections
        while !isClosed, budget > 0 {
            budget -= 1
            let result: IOResult<Int>
            do {
                result = try loop.readBuffer.read(fd) { state.feed($0) }
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
            switch state.nextMessage() {
            case .needMore:
                return
            case .failure(let error):
                carryOut(state.liveness.failed(error.closeCode, reason: error.reason), on: state)
                return
            case .message(let message):
                context.metrics.framesIn.add(1, ordering: .relaxed)
                switch message {
                case .ping(let payload):
                    carryOut(state.liveness.receivedPing(payload), on: state)
                case .pong:
                    state.liveness.receivedPong(at: loop.now)
                case .close(let code, _):
                    carryOut(state.liveness.receivedClose(code), on: state)
                    return
                case .binary where !state.session.acceptsBinary:
                    startClosing(.unsupportedData, reason: "binary messages are not supported")
                    return
                case .text, .binary:
                    guard state.liveness.sendsData else { continue }
                    state.session.received(message, on: state)
                }
            }
        }
    }

    // MARK: - Writing and closing

    /// Queues a data frame; none follows our close. A client whose queue passes its bound has
    /// fallen behind and is closed with 1013.
    func queueFrame(_ frame: [UInt8]) {
        guard !isClosed, let state = webSocket, state.liveness.sendsData else { return }
        guard !outbound.isEmpty else {
            queue(frame)
            return
        }
        countOut(frame)
        outbound.append(frame)
        if outbound.byteCount > context.limits.maxOutboundQueueBytes {
            // Best effort: the socket is full, so the close may not arrive; the client resumes from its cursor.
            outbound.discard()
            carryOut(state.liveness.fellBehind(), on: state)
            return
        }
        flush()
    }

    private func countOut(_ frame: [UInt8]) {
        context.metrics.framesOut.add(1, ordering: .relaxed)
        context.metrics.bytesOut.add(frame.count, ordering: .relaxed)
    }

    /// Counts a frame out and writes it, straight away when nothing waits before it.
    private func queue(_ frame: [UInt8]) {
        countOut(frame)
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
        } else {
            outbound.append(frame)
        }
        flush()
    }

    /// Does what the liveness machine decided.
    private func carryOut(_ actions: [WebSocketLiveness.Action], on state: WebSocketChannel) {
        for action in actions {
            guard !isClosed else { return }
            switch action {
            case .send(let control):
                if case .close(let code, _) = control, let code { context.metrics.recordClose(code.rawValue) }
                queue(control.frame)
            case .closeWhenWritten:
                advance(.closing)
                closeIfDone()
            case .closeNow:
                flush()
                close()
            case .awaitPeerClose:
                let bound = LoopBound(value: self)
                state.closeTimer = loop.schedule(afterNanoseconds: UInt64(context.limits.closeTimeoutMilliseconds) * 1_000_000) {
                    bound.value.close()
                }
            case .scheduleNextPing:
                schedulePing()
            }
        }
    }

    /// Sends our close frame and waits (bounded) for the peer's.
    func startClosing(_ code: WebSocketCloseCode, reason: String) {
        guard !isClosed, let state = webSocket else { return }
        carryOut(state.liveness.startClosing(code, reason: reason), on: state)
    }

    // MARK: - Keep-alive

    private func schedulePing() {
        loop.scheduleTick(fd, generation: generation, afterNanoseconds: UInt64(context.limits.pingIntervalMilliseconds) * 1_000_000)
    }

    /// The loop's tick (`schedulePing`): a closed connection has deregistered and gets none.
    func tick() {
        guard !isClosed, let state = webSocket else { return }
        carryOut(state.liveness.pingTick(at: loop.clock.now()), on: state)
    }
}
