/// The order of a connection's responses (HTTP/1.1 pipelining, RFC 9112 section 9.3.2): each
/// request taken gets the next number; handlers finish in any order; responses leave in
/// request order. A pure value the connection drives: it says what to write and when the
/// connection switches to WebSocket, and does no I/O.
struct ResponseQueue {
    /// What the connection does with responses that may leave now, in this order.
    enum Release: Equatable {
        case write([UInt8])
        /// The 101 just written was the upgrade's: everything after it is WebSocket.
        case switchProtocols
        /// The head just written is a streamed response's: its body follows, and the responses
        /// after it wait until `endStream`.
        case startStream(Int)
    }

    private var finished: [Int: [UInt8]] = [:]
    private var nextNumber = 0
    private var nextToWrite = 0
    /// The number of the accepted upgrade's 101, once its acceptor said yes.
    private var upgrade: Int?
    /// Finished responses whose body is streamed after their head.
    private var streamed: Set<Int> = []
    /// A streamed body is being written: nothing after it may leave.
    private(set) var streaming = false
    /// Requests taken whose responses are not finished yet.
    private(set) var inFlight = 0

    /// Whether a finished response waits for an earlier one (or for a streamed body).
    var hasWaiting: Bool { !finished.isEmpty }

    /// Numbers the next request; its response is owed from now.
    mutating func take() -> Int {
        defer {
            nextNumber += 1
            inFlight += 1
        }
        return nextNumber
    }

    /// The response numbered `number` switches the connection to WebSocket once written.
    mutating func upgrade(at number: Int) {
        upgrade = number
    }

    /// A response is finished: what may be written now (it, and any finished after it that
    /// waited for it), stopping after a protocol switch.
    /// `streamed`: `bytes` is the head of a response whose body the connection streams next.
    mutating func finish(_ number: Int, _ bytes: [UInt8], streamed isStreamed: Bool = false) -> [Release] {
        inFlight -= 1
        finished[number] = bytes
        if isStreamed { streamed.insert(number) }
        return release()
    }

    /// The streamed body is written: the responses that waited for it may leave.
    mutating func endStream() -> [Release] {
        streaming = false
        return release()
    }

    private mutating func release() -> [Release] {
        var releases: [Release] = []
        while !streaming, let next = finished.removeValue(forKey: nextToWrite) {
            releases.append(.write(next))
            nextToWrite += 1
            if upgrade == nextToWrite - 1 {
                upgrade = nil
                releases.append(.switchProtocols)
                break
            }
            if streamed.remove(nextToWrite - 1) != nil {
                streaming = true
                releases.append(.startStream(nextToWrite - 1))
            }
        }
        return releases
    }
}

/// Which client deadline runs on an HTTP connection, decided from its state alone (the
/// connection arms, keeps or cancels the timer as told).
enum ConnectionDeadline: Equatable {
    /// Runs from a request's first byte and is not extended by later bytes (slowloris).
    case header
    /// Runs while nothing is owed either way; any activity restarts it.
    case idle
    /// Runs while output waits for the client to read; only write progress restarts it.
    case write

    enum Decision: Equatable {
        /// The running deadline stays as it is.
        case keep
        /// No deadline runs now (the server owes a response): cancel any.
        case none
        /// Cancel any running deadline and start this one.
        case start(ConnectionDeadline)
    }

    /// `progress`: output was just written, which restarts a running write deadline.
    static func decide(current: ConnectionDeadline?, outputPending: Bool, responsesOwed: Bool, midRequest: Bool,
                       progress: Bool) -> Decision {
        let wanted: ConnectionDeadline?
        if outputPending {
            wanted = .write  // the client must keep reading
        } else if responsesOwed {
            wanted = nil  // the server owes a response; no client deadline runs
        } else {
            wanted = midRequest ? .header : .idle
        }
        guard let wanted else { return .none }
        // A running header deadline stays: more bytes do not buy more time; nor do more
        // requests buy time for output the client is not reading.
        if current == wanted && (wanted == .header || (wanted == .write && !progress)) { return .keep }
        return .start(wanted)
    }

    func milliseconds(_ limits: NetworkLimits) -> Int {
        self == .header ? limits.headerTimeoutMilliseconds : limits.idleTimeoutMilliseconds
    }
}
