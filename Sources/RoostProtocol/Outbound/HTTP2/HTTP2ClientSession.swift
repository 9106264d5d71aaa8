/// The client side of one HTTP/2 connection (RFC 9113) as a state machine: bytes from the server
/// go in, responses and failures come out, and the bytes to send are taken when the connection
/// can write them. No sockets and no clocks: the delivery engine's connection moves the bytes
/// and keeps the deadlines, the tests and the fuzzer drive it directly.
///
/// What a push client needs and no more: requests with a body (HEADERS, CONTINUATION when the
/// block is larger than a frame, DATA within both flow-control windows), responses with their
/// status, headers and the start of their body; SETTINGS, PING, WINDOW_UPDATE, RST_STREAM and
/// GOAWAY answered as the RFC says. Server push is turned off in our SETTINGS (a PUSH_PROMISE is
/// a connection error), priorities are ignored. Anything the server gets wrong that breaks the
/// connection fails every stream, and the connection ends with a GOAWAY saying why.
public struct HTTP2ClientSession: Sendable {
    public struct Settings: Sendable {
        /// Streams open at once, at most, whatever more the server allows.
        public var maxConcurrentStreams = 256
        /// The window each response stream starts with (our SETTINGS_INITIAL_WINDOW_SIZE).
        public var streamWindow = 1 << 20
        /// The connection's receive window, raised to this at the start.
        public var connectionWindow = 1 << 24
        /// The most of a response body kept (a push service says little; the rest is read and dropped).
        public var maxBodyKept = 16_384
        public var maxHeaderListSize = 65_536

        public init() {}
    }

    public struct Response: Equatable, Sendable {
        public let status: Int
        /// Header names lower-case; a repeated header keeps its last value.
        public let headers: [String: String]
        public let body: [UInt8]
    }

    public enum Event: Equatable, Sendable {
        case response(stream: UInt32, Response)
        /// The stream ended without a response. `unprocessed`: the server said it did nothing
        /// with it (REFUSED_STREAM, or a GOAWAY below it), so it may be sent again as it is.
        case streamFailed(stream: UInt32, reason: String, unprocessed: Bool)
        /// The connection is over; every stream that was open has had its `streamFailed`.
        case closed(reason: String)
    }

    private struct Stream {
        var body: [UInt8]
        var sent = 0
        var window: Int
        var status: Int?
        var headers: [String: String] = [:]
        var received: [UInt8] = []
        var unacknowledged = 0
    }

    public let settings: Settings
    private var reader: HTTP2.FrameReader
    private var decoder: HPACK.Decoder
    private var output: [UInt8] = []
    private var streams: [UInt32: Stream] = [:]
    /// Streams with body bytes still to send, in the order they were opened.
    private var sending: [UInt32] = []
    private var nextStream: UInt32 = 1
    private var connectionSendWindow = 65_535
    private var connectionUnacknowledged = 0
    /// RFC 9113 starts it unlimited, but a server that allows fewer says so only in its
    /// SETTINGS, which may come after our first requests: until then, no more than 100 (the
    /// least the RFC recommends servers allow, §6.5.2).
    private var peerMaxStreams = 100
    private var peerInitialWindow = 65_535
    private var peerMaxFrame = 16_384
    private var sawServerSettings = false
    /// A header block being read across CONTINUATION frames: its stream, whether it ends the
    /// stream, and its fragments so far.
    private var continuing: (stream: UInt32, endStream: Bool, block: [UInt8])?
    public private(set) var goingAway = false
    public private(set) var isClosed = false

    public init(settings: Settings = Settings()) {
        self.settings = settings
        reader = HTTP2.FrameReader(maxFrameSize: 16_384)
        decoder = HPACK.Decoder(maxCapacity: 4096, maxListSize: settings.maxHeaderListSize)
        output = HTTP2.preface
        var payload: [UInt8] = []
        for (setting, value) in [(HTTP2.Setting.enablePush, 0), (.initialWindowSize, settings.streamWindow),
                                 (.maxHeaderListSize, settings.maxHeaderListSize)] {
            payload += [UInt8(setting.rawValue >> 8), UInt8(setting.rawValue & 0xff)]
            HTTP2.appendUInt32(UInt32(value), to: &payload)
        }
        output += HTTP2.frame(.settings, payload: payload)
        if settings.connectionWindow > 65_535 { queueWindowUpdate(stream: 0, UInt32(settings.connectionWindow - 65_535)) }
    }

    /// Streams waiting for their response.
    public var openStreams: Int { streams.count }

    /// Requests that could still start now.
    public var spareStreams: Int { canOpen ? min(peerMaxStreams, settings.maxConcurrentStreams) - streams.count : 0 }

    /// Whether another request can start now.
    public var canOpen: Bool {
        !goingAway && !isClosed && streams.count < min(peerMaxStreams, settings.maxConcurrentStreams) && nextStream < 0x7fff_ffff
    }

    /// Starts a request: `fields` are its header fields, pseudo-fields first (`:method`,
    /// `:scheme`, `:authority`, `:path`), names lower-case. Returns its stream, or nil when no
    /// stream can open now (`canOpen`).
    public mutating func open(_ fields: [(name: String, value: String)], body: [UInt8]) -> UInt32? {
        guard canOpen else { return nil }
        let stream = nextStream
        nextStream += 2
        let block = HPACK.encode(fields)
        var offset = 0
        repeat {
            let end = min(block.count, offset + peerMaxFrame)
            var flags: UInt8 = end == block.count ? HTTP2.Flag.endHeaders : 0
            if offset == 0, body.isEmpty { flags |= HTTP2.Flag.endStream }
            HTTP2.appendFrame(offset == 0 ? .headers : .continuation, flags: flags, stream: stream, payload: block[offset..<end], to: &output)
            offset = end
        } while offset < block.count
        streams[stream] = Stream(body: body, window: peerInitialWindow)
        if !body.isEmpty { sending.append(stream) }
        return stream
    }

    /// Gives up on a stream (its deadline passed): the server is told to stop with RST_STREAM.
    public mutating func cancel(_ stream: UInt32) {
        guard streams.removeValue(forKey: stream) != nil else { return }
        sending.removeAll { $0 == stream }
        output += HTTP2.frame(.resetStream, stream: stream, payload: Self.bytes(HTTP2.ErrorCode.cancel.rawValue))
    }

    /// Ends the connection politely: no new streams; the open ones finish.
    public mutating func shutDown() -> [Event] {
        guard !goingAway else { return [] }
        goingAway = true
        output += HTTP2.frame(.goAway, payload: Self.bytes(0) + Self.bytes(HTTP2.ErrorCode.noError.rawValue))
        return streams.isEmpty ? close("the connection was shut down") : []
    }

    /// The connection ended under the session (an I/O error, the server closed it): every open
    /// stream fails.
    public mutating func lost(_ reason: String) -> [Event] {
        guard !isClosed else { return [] }
        return close(reason)
    }

    /// Bytes to send now: control frames and headers as they come, then as much of the bodies
    /// as the flow-control windows let through.
    public mutating func takeOutput() -> [UInt8] {
        while connectionSendWindow > 0, let stream = sending.first {
            guard var state = streams[stream] else {
                sending.removeFirst()
                continue
            }
            // A stream's window may be below zero (the server lowered SETTINGS_INITIAL_WINDOW_SIZE,
            // RFC 9113 §6.9.2); it waits for WINDOW_UPDATEs behind the others.
            let size = max(0, min(state.body.count - state.sent, connectionSendWindow, state.window, peerMaxFrame))
            if size == 0 {
                if sending.contains(where: { (streams[$0]?.window ?? 0) > 0 && $0 != stream }) {
                    sending.append(sending.removeFirst())
                    continue
                }
                break
            }
            let end = state.sent + size
            HTTP2.appendFrame(.data, flags: end == state.body.count ? HTTP2.Flag.endStream : 0, stream: stream,
                              payload: state.body[state.sent..<end], to: &output)
            state.sent = end
            state.window -= size
            connectionSendWindow -= size
            if end == state.body.count {
                state.body = []
                state.sent = 0
                sending.removeFirst()
            }
            streams[stream] = state
        }
        defer { output.removeAll(keepingCapacity: true) }
        return output
    }

    /// Takes in bytes from the server; what they complete or end.
    public mutating func receive(_ bytes: [UInt8]) -> [Event] {
        guard !isClosed else { return [] }
        reader.append(bytes)
        var events: [Event] = []
        do throws(HTTP2.ConnectionError) {
            while !isClosed, let frame = try reader.next() {
                try handle(frame, into: &events)
            }
        } catch {
            output += HTTP2.frame(.goAway, payload: Self.bytes(0) + Self.bytes(error.code.rawValue) + Array(error.description.utf8.prefix(256)))
            events += close("\(HTTP2.ErrorCode.name(error.code.rawValue)): \(error.description)")
        }
        return events
    }

    private mutating func handle(_ frame: HTTP2.Frame, into events: inout [Event]) throws(HTTP2.ConnectionError) {
        if !sawServerSettings {
            guard frame.kind == .settings, !frame.has(HTTP2.Flag.ack) else {
                throw HTTP2.ConnectionError(.protocolError, "the server's first frame is not SETTINGS")
            }
            sawServerSettings = true
        }
        if let continuing, frame.kind != .continuation || frame.stream != continuing.stream {
            throw HTTP2.ConnectionError(.protocolError, "a header block on stream \(continuing.stream) was interrupted")
        }
        guard let kind = frame.kind else { return }  // Unknown frame types are ignored (RFC 9113 §4.1).
        switch kind {
        case .data:
            guard frame.stream != 0 else { throw HTTP2.ConnectionError(.protocolError, "DATA on stream 0") }
            let content = try Self.unpadded(frame)
            connectionUnacknowledged += frame.payload.count
            if connectionUnacknowledged >= settings.connectionWindow / 2 {
                queueWindowUpdate(stream: 0, UInt32(connectionUnacknowledged))
                connectionUnacknowledged = 0
            }
            guard var state = streams[frame.stream] else { return }  // One we cancelled: its data is dropped.
            guard state.status != nil else {
                events += failStream(frame.stream, code: .protocolError, "DATA before the response's headers")
                return
            }
            state.unacknowledged += frame.payload.count
            guard state.unacknowledged <= settings.streamWindow else {
                events += failStream(frame.stream, code: .flowControlError, "more DATA than the stream's window")
                return
            }
            if state.received.count < settings.maxBodyKept {
                state.received += content.prefix(settings.maxBodyKept - state.received.count)
            }
            if frame.has(HTTP2.Flag.endStream) {
                streams[frame.stream] = state
                events += complete(frame.stream)
                return
            }
            if state.unacknowledged >= settings.streamWindow / 2 {
                queueWindowUpdate(stream: frame.stream, UInt32(state.unacknowledged))
                state.unacknowledged = 0
            }
            streams[frame.stream] = state
        case .headers:
            guard frame.stream != 0, frame.stream % 2 == 1 else { throw HTTP2.ConnectionError(.protocolError, "HEADERS on stream \(frame.stream)") }
            var fragment = try Self.unpadded(frame)
            if frame.has(HTTP2.Flag.priority) {
                guard fragment.count >= 5 else { throw HTTP2.ConnectionError(.frameSizeError, "HEADERS too short for its priority") }
                fragment = fragment.dropFirst(5)
            }
            let endStream = frame.has(HTTP2.Flag.endStream)
            if frame.has(HTTP2.Flag.endHeaders) {
                try headerBlock(Array(fragment), stream: frame.stream, endStream: endStream, into: &events)
            } else {
                continuing = (frame.stream, endStream, Array(fragment))
            }
        case .continuation:
            guard var block = continuing else { throw HTTP2.ConnectionError(.protocolError, "CONTINUATION without HEADERS before it") }
            block.block += frame.payload
            guard block.block.count <= settings.maxHeaderListSize else {
                throw HTTP2.ConnectionError(.enhanceYourCalm, "a header block larger than \(settings.maxHeaderListSize) bytes")
            }
            if frame.has(HTTP2.Flag.endHeaders) {
                continuing = nil
                try headerBlock(block.block, stream: block.stream, endStream: block.endStream, into: &events)
            } else {
                continuing = block
            }
        case .priority:
            guard frame.stream != 0 else { throw HTTP2.ConnectionError(.protocolError, "PRIORITY on stream 0") }
        case .resetStream:
            guard frame.stream != 0 else { throw HTTP2.ConnectionError(.protocolError, "RST_STREAM on stream 0") }
            guard frame.payload.count == 4 else { throw HTTP2.ConnectionError(.frameSizeError, "RST_STREAM of \(frame.payload.count) bytes") }
            guard streams.removeValue(forKey: frame.stream) != nil else { return }
            sending.removeAll { $0 == frame.stream }
            let code = HTTP2.uint32(frame.payload, at: 0)
            events.append(.streamFailed(stream: frame.stream, reason: "the server reset the stream (\(HTTP2.ErrorCode.name(code)))",
                                        unprocessed: code == HTTP2.ErrorCode.refusedStream.rawValue))
            if goingAway, streams.isEmpty { events += close("the server ended the connection") }
        case .settings:
            guard frame.stream == 0 else { throw HTTP2.ConnectionError(.protocolError, "SETTINGS on stream \(frame.stream)") }
            if frame.has(HTTP2.Flag.ack) {
                guard frame.payload.isEmpty else { throw HTTP2.ConnectionError(.frameSizeError, "a SETTINGS acknowledgement with a payload") }
                return
            }
            guard frame.payload.count % 6 == 0 else { throw HTTP2.ConnectionError(.frameSizeError, "SETTINGS of \(frame.payload.count) bytes") }
            for offset in stride(from: 0, to: frame.payload.count, by: 6) {
                let identifier = UInt16(frame.payload[offset]) << 8 | UInt16(frame.payload[offset + 1])
                try apply(identifier, Int(HTTP2.uint32(frame.payload, at: offset + 2)))
            }
            output += HTTP2.frame(.settings, flags: HTTP2.Flag.ack)
        case .pushPromise:
            throw HTTP2.ConnectionError(.protocolError, "PUSH_PROMISE although server push is off")
        case .ping:
            guard frame.stream == 0 else { throw HTTP2.ConnectionError(.protocolError, "PING on stream \(frame.stream)") }
            guard frame.payload.count == 8 else { throw HTTP2.ConnectionError(.frameSizeError, "PING of \(frame.payload.count) bytes") }
            if !frame.has(HTTP2.Flag.ack) { output += HTTP2.frame(.ping, flags: HTTP2.Flag.ack, payload: frame.payload) }
        case .goAway:
            guard frame.stream == 0 else { throw HTTP2.ConnectionError(.protocolError, "GOAWAY on stream \(frame.stream)") }
            guard frame.payload.count >= 8 else { throw HTTP2.ConnectionError(.frameSizeError, "GOAWAY of \(frame.payload.count) bytes") }
            let last = HTTP2.uint32(frame.payload, at: 0) & 0x7fff_ffff
            let code = HTTP2.uint32(frame.payload, at: 4)
            goingAway = true
            // Streams above the last one the server will process were not touched: they may go again elsewhere.
            for stream in streams.keys.sorted() where stream > last {
                streams[stream] = nil
                sending.removeAll { $0 == stream }
                events.append(.streamFailed(stream: stream, reason: "the server is ending the connection (GOAWAY \(HTTP2.ErrorCode.name(code)))",
                                            unprocessed: true))
            }
            if streams.isEmpty { events += close("the server ended the connection (GOAWAY \(HTTP2.ErrorCode.name(code)))") }
        case .windowUpdate:
            guard frame.payload.count == 4 else { throw HTTP2.ConnectionError(.frameSizeError, "WINDOW_UPDATE of \(frame.payload.count) bytes") }
            let increment = Int(HTTP2.uint32(frame.payload, at: 0) & 0x7fff_ffff)
            if frame.stream == 0 {
                guard increment > 0 else { throw HTTP2.ConnectionError(.protocolError, "a connection WINDOW_UPDATE of 0") }
                connectionSendWindow += increment
                guard connectionSendWindow <= Int(Int32.max) else { throw HTTP2.ConnectionError(.flowControlError, "the connection window passed 2^31-1") }
            } else if var state = streams[frame.stream] {
                guard increment > 0 else {
                    events += failStream(frame.stream, code: .protocolError, "a stream WINDOW_UPDATE of 0")
                    return
                }
                state.window += increment
                guard state.window <= Int(Int32.max) else {
                    events += failStream(frame.stream, code: .flowControlError, "the stream window passed 2^31-1")
                    return
                }
                streams[frame.stream] = state
            }
        }
    }

    /// A whole header block: decoded always (the decoder's table must see every block), then
    /// read as the response's headers or trailers if its stream is still open.
    private mutating func headerBlock(_ block: [UInt8], stream: UInt32, endStream: Bool, into events: inout [Event]) throws(HTTP2.ConnectionError) {
        let fields: [(name: String, value: String)]
        do throws(HPACK.Failure) {
            fields = try decoder.decode(block)
        } catch {
            throw HTTP2.ConnectionError(.compressionError, error.description)
        }
        guard var state = streams[stream] else {
            guard stream < nextStream else { throw HTTP2.ConnectionError(.protocolError, "HEADERS on stream \(stream), which was never opened") }
            return
        }
        if state.status == nil {
            guard let text = fields.first(where: { $0.name == ":status" })?.value, text.utf8.count == 3, let status = Int(text), (100...599).contains(status) else {
                events += failStream(stream, code: .protocolError, "a response without a valid :status")
                return
            }
            // An informational response (100 Continue, 103 Early Hints) comes before the real one.
            if status < 200 {
                if endStream { events += failStream(stream, code: .protocolError, "an informational response that ends the stream") }
                return
            }
            state.status = status
            for (name, value) in fields where !name.hasPrefix(":") { state.headers[name] = value }
        } else if !endStream {
            events += failStream(stream, code: .protocolError, "trailers that do not end the stream")
            return
        }
        streams[stream] = state
        if endStream { events += complete(stream) }
    }

    private mutating func apply(_ identifier: UInt16, _ value: Int) throws(HTTP2.ConnectionError) {
        switch HTTP2.Setting(rawValue: identifier) {
        case .enablePush:
            guard value <= 1 else { throw HTTP2.ConnectionError(.protocolError, "SETTINGS_ENABLE_PUSH of \(value)") }
        case .maxConcurrentStreams:
            peerMaxStreams = value
        case .initialWindowSize:
            guard value <= Int(Int32.max) else { throw HTTP2.ConnectionError(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE of \(value)") }
            let change = value - peerInitialWindow
            peerInitialWindow = value
            for stream in streams.keys {
                streams[stream]!.window += change
                guard streams[stream]!.window <= Int(Int32.max) else {
                    throw HTTP2.ConnectionError(.flowControlError, "a stream window passed 2^31-1")
                }
            }
        case .maxFrameSize:
            guard (16_384...16_777_215).contains(value) else { throw HTTP2.ConnectionError(.protocolError, "SETTINGS_MAX_FRAME_SIZE of \(value)") }
            peerMaxFrame = value
        case .headerTableSize, .maxHeaderListSize, nil:
            // Our encoder never uses the dynamic table; our headers are a few hundred bytes.
            break
        }
    }

    /// The stream's response is whole; a connection going away closes after its last one.
    private mutating func complete(_ stream: UInt32) -> [Event] {
        let state = streams.removeValue(forKey: stream)!
        sending.removeAll { $0 == stream }
        let event = Event.response(stream: stream, Response(status: state.status!, headers: state.headers, body: state.received))
        return [event] + (goingAway && streams.isEmpty ? close("the connection finished its last stream") : [])
    }

    /// A stream error (RFC 9113 §5.4.2): the stream is reset, the connection goes on.
    private mutating func failStream(_ stream: UInt32, code: HTTP2.ErrorCode, _ reason: String) -> [Event] {
        guard streams.removeValue(forKey: stream) != nil else { return [] }
        sending.removeAll { $0 == stream }
        output += HTTP2.frame(.resetStream, stream: stream, payload: Self.bytes(code.rawValue))
        return [.streamFailed(stream: stream, reason: "stream \(stream): \(reason)", unprocessed: false)]
    }

    private mutating func close(_ reason: String) -> [Event] {
        isClosed = true
        goingAway = true
        var events: [Event] = streams.keys.sorted().map { .streamFailed(stream: $0, reason: reason, unprocessed: false) }
        streams.removeAll()
        sending.removeAll()
        events.append(.closed(reason: reason))
        return events
    }

    private mutating func queueWindowUpdate(stream: UInt32, _ increment: UInt32) {
        output += HTTP2.frame(.windowUpdate, stream: stream, payload: Self.bytes(increment))
    }

    private static func unpadded(_ frame: HTTP2.Frame) throws(HTTP2.ConnectionError) -> ArraySlice<UInt8> {
        guard frame.has(HTTP2.Flag.padded) else { return frame.payload[...] }
        guard let padding = frame.payload.first.map(Int.init), padding < frame.payload.count else {
            throw HTTP2.ConnectionError(.protocolError, "padding longer than the frame")
        }
        return frame.payload[1..<frame.payload.count - padding]
    }

    private static func bytes(_ value: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        HTTP2.appendUInt32(value, to: &bytes)
        return bytes
    }
}
