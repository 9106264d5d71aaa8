#if canImport(Glibc)
import Glibc
#endif

/// Bytes waiting to go out on one socket, written with one `sendmsg` so several queued responses
/// or frames leave in one call. Chunks are shared arrays: the same encoded frame can sit in
/// many connections' buffers without being copied.
struct OutboundBuffer {
    private var chunks: [[UInt8]] = []
    private var head = 0
    /// Bytes of `chunks[head]` already written.
    private var offset = 0
    private(set) var byteCount = 0

    var isEmpty: Bool { byteCount == 0 }

    mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        chunks.append(bytes)
        byteCount += bytes.count
    }

    /// Writes `bytes` straight away, for callers with nothing queued (a stream's usual case:
    /// one frame, one `send`, nothing copied), and queues what the socket did not take. True
    /// when all of it went.
    mutating func write(_ bytes: [UInt8], to fd: Int32) throws(SystemError) -> Bool {
        precondition(byteCount == 0, "writing past queued bytes would reorder them")
        let result = try systemCall("send") { bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        let sent: Int
        switch result {
        case .done(let count): sent = count
        case .wouldBlock: sent = 0
        }
        guard sent < bytes.count else { return true }
        chunks = [bytes]
        head = 0
        offset = sent
        byteCount = bytes.count - sent
        return false
    }

    /// Writes as much as the socket takes. Returns true when everything was written.
    mutating func write(to fd: Int32) throws(SystemError) -> Bool {
        while byteCount > 0 {
            let count = min(chunks.count - head, 64)
            // sendmsg rather than writev: MSG_NOSIGNAL turns a write to a peer that has gone into
            // EPIPE instead of a SIGPIPE that would end the whole process.
            let written: IOResult<Int> = try withVectors(count) { vectors throws(SystemError) in
                var message = msghdr()
                message.msg_iov = vectors.baseAddress
                message.msg_iovlen = count
                return try systemCall("sendmsg") { sendmsg(fd, &message, Int32(MSG_NOSIGNAL)) }
            }
            guard case .done(let sent) = written else { return false }
            consume(sent)
        }
        // Drained: the list goes too. An idle stream keeps nothing here (its frames usually go
        // straight out, `write(_:to:)`), and an HTTP response's list costs one allocation.
        chunks = []
        head = 0
        offset = 0
        return true
    }

    /// Frees everything queued (a connection closed for falling behind).
    mutating func discard() {
        chunks = []
        head = 0
        offset = 0
        byteCount = 0
    }

    private func withVectors<Result>(
        _ count: Int, _ body: (UnsafeMutableBufferPointer<iovec>) throws(SystemError) -> Result
    ) throws(SystemError) -> Result {
        // At most 64 vectors: on the stack, not a heap array per write.
        try withUnsafeTemporaryAllocation(of: iovec.self, capacity: count) { vectors throws(SystemError) in
            for position in 0..<count {
                let chunk = chunks[head + position]
                let skip = position == 0 ? offset : 0
                // `chunks` holds every array (never empty) unmodified until `body` returns, so the
                // storage these pointers name outlives the sendmsg call.
                let base = chunk.withUnsafeBytes { $0.baseAddress! } + skip
                vectors[position] = iovec(iov_base: UnsafeMutableRawPointer(mutating: base), iov_len: chunk.count - skip)
            }
            return try body(vectors)
        }
    }

    private mutating func consume(_ sent: Int) {
        var remaining = sent
        byteCount -= sent
        while remaining > 0 {
            let available = chunks[head].count - offset
            if remaining >= available {
                remaining -= available
                chunks[head] = []
                head += 1
                offset = 0
            } else {
                offset += remaining
                remaining = 0
            }
        }
        if head > 32 && head * 2 > chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }
}
