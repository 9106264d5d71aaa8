import RoostProtocol

/// Streamed request bodies (routes added with `streamedBody: true`): the handler runs from the
/// request's head on and takes the body with `RequestBodyStream.next()` while it arrives. The
/// connection reads the socket only while fewer than `highWater` bytes wait for the handler,
/// so an upload costs about that much memory whatever its size. A client that sends nothing
/// for the idle timeout while the handler waits fails the body (408, then the connection
/// closes); so does one whose body averages under the minimum rate over a window (408: a
/// thousand uploads trickling a byte at a time would otherwise hold their slots for ever);
/// so do broken framing, the peer going away, and the handler answering early.
extension HTTPConnection {
    struct Upload {
        let number: Int
        let stream: RequestBodyStream
        /// The handler has not taken `highWater` bytes yet: the socket is not read.
        var paused = false
        /// The stall deadline while the connection waits on the client.
        var timer: UInt64?
        /// How fast the body comes, judged at each `paceTimer` tick while the socket is read.
        var pace: UploadPace
        var paceTimer: UInt64?
    }

    static let uploadHighWater = 256 << 10
    static let uploadLowWater = 64 << 10

    /// `continueOwed`: the client asked for `100 Continue` and nothing is owed before this
    /// response, so it is sent when the handler first asks for the body.
    func beginUpload(_ number: Int, continueOwed: Bool) -> RequestBodyStream {
        let bound = LoopBound(value: self)
        let loop = self.loop
        let stream = RequestBodyStream(highWater: Self.uploadHighWater, lowWater: Self.uploadLowWater, firstRead: {
            guard continueOwed else { return }
            loop.execute { bound.value.sendContinue(number) }
        }, resume: {
            loop.execute { bound.value.uploadDrained() }
        })
        let limits = context.limits
        let pace = UploadPace(minimumBytesPerSecond: limits.minUploadBytesPerSecond,
                              windowNanoseconds: UInt64(limits.uploadRateWindowMilliseconds) * 1_000_000, now: loop.clock.now())
        http?.upload = Upload(number: number, stream: stream, pace: pace)
        rearmUploadTimer()
        armPaceTimer()
        return stream
    }

    /// `100 Continue`, while the upload it was asked for still runs and nothing was written
    /// since: the client then sends the body at once rather than after its own timeout (curl
    /// waits a second past 1 MiB).
    private func sendContinue(_ number: Int) {
        guard !isClosed, http?.upload?.number == number, outbound.isEmpty else { return }
        outbound.append(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        flush()
    }

    func receivedUploadPart(_ part: [UInt8]) {
        guard let http, http.upload != nil else { return }
        http.upload!.pace.receive(part.count)
        if http.upload!.stream.push(part) {
            http.upload!.paused = true
            cancelUploadTimer()  // the server is behind, not the client
            cancelPaceTimer()
        } else {
            rearmUploadTimer()
        }
    }

    /// The handler took enough: read again, from what the parser already holds.
    private func uploadDrained() {
        guard let http, http.upload?.paused == true else { return }
        http.upload!.paused = false
        http.upload!.pace.restart(now: loop.clock.now())
        rearmUploadTimer()
        armPaceTimer()
        updateInterest()
        resumeRequests()
    }

    /// The body ended (`failing` nil) or will not: either way the connection is done with it.
    func endUpload(failing error: APIError?) {
        guard let http, let upload = http.upload else { return }
        if let error { upload.stream.fail(error) } else { upload.stream.end() }
        cancelUploadTimer()
        cancelPaceTimer()
        http.upload = nil
    }

    private func rearmUploadTimer() {
        cancelUploadTimer()
        let bound = LoopBound(value: self)
        let milliseconds = context.limits.idleTimeoutMilliseconds
        http?.upload?.timer = loop.schedule(afterNanoseconds: UInt64(milliseconds) * 1_000_000) {
            let connection = bound.value
            guard connection.http?.upload != nil else { return }
            connection.http?.upload?.timer = nil
            connection.cutUpload(APIError(.requestTimeout, code: .timeout, message: "the request body stalled (nothing for \(milliseconds / 1000) s)"))
        }
    }

    /// The body will not be read further: the handler gets `error` (its answer), then the
    /// connection closes.
    private func cutUpload(_ error: APIError) {
        advance(.finalResponse)
        endUpload(failing: error)
        updateInterest()
    }

    /// Ticks six times a window while the socket is read; each asks the pace whether the last
    /// whole window brought the minimum.
    private func armPaceTimer() {
        cancelPaceTimer()
        let limits = context.limits
        guard limits.minUploadBytesPerSecond > 0 else { return }
        let bound = LoopBound(value: self)
        let interval = max(UInt64(limits.uploadRateWindowMilliseconds) * 1_000_000 / 6, 1_000_000)
        http?.upload?.paceTimer = loop.schedule(afterNanoseconds: interval) {
            let connection = bound.value
            guard connection.http?.upload != nil else { return }
            connection.http?.upload?.paceTimer = nil
            if connection.http!.upload!.pace.isTooSlow(now: connection.loop.clock.now()) {
                connection.context.metrics.uploadsTooSlow.add(1, ordering: .relaxed)
                connection.cutUpload(APIError(.requestTimeout, code: .timeout, message: "the upload is too slow: under \(limits.minUploadBytesPerSecond >> 10) KiB/s "
                                                  + "over \(limits.uploadRateWindowMilliseconds / 1000) s"))
            } else {
                connection.armPaceTimer()
            }
        }
    }

    private func cancelPaceTimer() {
        if let token = http?.upload?.paceTimer {
            loop.cancelTimer(token)
            http?.upload?.paceTimer = nil
        }
    }

    private func cancelUploadTimer() {
        if let token = http?.upload?.timer {
            loop.cancelTimer(token)
            http?.upload?.timer = nil
        }
    }
}
