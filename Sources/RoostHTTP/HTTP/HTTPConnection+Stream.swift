import RoostProtocol

/// Streamed response bodies (`HTTPResponse.stream`): once the head is written, pieces are asked
/// of the source one at a time, each only while the connection's queue is below half its
/// bound, so a slow reader holds the producer back and the connection's memory stays bounded
/// however long the body. Each piece is a chunk (RFC 9112 §7.1); the end writes the last chunk
/// and lets the responses pipelined behind it leave. A source that throws is logged and closes
/// the connection: the client sees a body without its end, never a complete-looking one.
extension HTTPConnection {
    /// Asks for the next piece when one is wanted and none is on its way.
    func pumpStream() {
        guard let http, let stream = http.activeStream, !http.fetchingPiece,
              outbound.byteCount < context.limits.maxOutboundQueueBytes / 2 else { return }
        http.fetchingPiece = true
        let bound = LoopBound(value: self)
        let loop = self.loop
        let source = stream.source
        Task {
            let piece: Result<[UInt8]?, any Error>
            do {
                piece = .success(try await source.next())
            } catch {
                piece = .failure(error)
            }
            loop.execute { bound.value.received(piece, from: stream) }
        }
    }

    private func received(_ piece: Result<[UInt8]?, any Error>, from stream: ResponseStream) {
        http?.fetchingPiece = false
        guard let http, http.activeStream == stream else { return }  // closed meanwhile
        switch piece {
        case .failure(let error):
            // The head is out, so no error response can follow: the client sees a cut body.
            context.log.error("response body failed; connection closed", ["peer": peer, "error": "\(error)"])
            close()
        case .success(let bytes?):
            if !bytes.isEmpty { outbound.append(stream.length == nil ? ResponseStream.chunk(bytes) : bytes) }
            flush()  // asks for the next piece when the queue has room
        case .success(nil):
            if stream.length == nil { outbound.append(ResponseStream.end) }
            http.activeStream = nil
            guard apply(http.responses.endStream(), of: http) else { return }
            flush()
            resumeRequests()
            closeIfDone()
        }
    }
}
