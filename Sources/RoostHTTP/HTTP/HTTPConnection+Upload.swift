import RoostProtocol

/// Streamed request bodies (routes added with `streamedBody: true`): the handler runs from the
/// request's head on and takes the body with `RequestBodyStream.next()` while it arrives. The
/// connection reads the socket only while fewer than `highWater` bytes wait for the handler,
/// so an upload costs about that much memory whatever its size. A client that sends nothing
/// for the idle timeout while the handler waits fails the body (408, then the connection
/// closes); so do broken framing, the peer going away, and the handler answering early.
extension HTTPConnection {
    struct Upload {
        let number: Int
        let stream: RequestBodyStream
        /// The handler has not taken `highWater` bytes yet: the socket is not read.
        var paused = false
        /// The stall deadline while the connection waits on the client.
        var timer: UInt64?
    }

    static let uploadHighWater = 256 << 10
    static let uploadLowWater = 64 << 10

    func beginUpload(_ number: Int) -> RequestBodyStream {
        let bound = LoopBound(value: self)
        let loop = self.loop
        let stream = RequestBodyStream(highWater: Self.uploadHighWater, lowWater: Self.uploadLowWater) {
            loop.execute { bound.value.uploadDrained() }
        }
        http?.upload = Upload(number: number, stream: stream)
        rearmUploadTimer()
        return stream
    }

    func receivedUploadPart(_ part: [UInt8]) {
        guard let http, http.upload != nil else { return }
        if http.upload!.stream.push(part) {
            http.upload!.paused = true
            cancelUploadTimer()  // the server is behind, not the client
        } else {
            rearmUploadTimer()
        }
    }

    /// The handler took enough: read again, from what the parser already holds.
    private func uploadDrained() {
        guard let http, http.upload?.paused == true else { return }
        http.upload!.paused = false
        rearmUploadTimer()
        updateInterest()
        resumeRequests()
    }

    /// The body ended (`failing` nil) or will not: either way the connection is done with it.
    func endUpload(failing error: APIError?) {
        guard let http, let upload = http.upload else { return }
        if let error { upload.stream.fail(error) } else { upload.stream.end() }
        cancelUploadTimer()
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
            connection.stopReading = true
            connection.closeWhenDrained = true
            connection.endUpload(failing: APIError(.requestTimeout, code: "timeout",
                                                   message: "the request body stalled (nothing for \(milliseconds / 1000) s)"))
            connection.updateInterest()
        }
    }

    private func cancelUploadTimer() {
        if let token = http?.upload?.timer {
            loop.cancelTimer(token)
            http?.upload?.timer = nil
        }
    }
}
