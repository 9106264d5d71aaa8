/// Reads MQTT control packets from a byte stream as it arrives: `append` what the socket gave,
/// then take `next` until it returns nil (more bytes needed). A packet larger than
/// `maxPacketSize` is refused as soon as its length is read, before its body is buffered.
/// Anything the two standards call malformed, or a protocol error, throws `MQTT.Failure`;
/// after a throw the reader is spent (the connection ends).
public struct MQTTReader: Sendable {
    public let maxPacketSize: Int
    private var buffer: [UInt8] = []
    private var start = 0

    public init(maxPacketSize: Int) {
        self.maxPacketSize = maxPacketSize
    }

    /// Bytes received and not yet read as packets.
    public var buffered: Int { buffer.count - start }

    public mutating func append<Bytes: Collection<UInt8>>(_ bytes: Bytes) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole packet, or nil when more bytes are needed. `level`: the connection's
    /// protocol level once CONNECT was read (nil before: only CONNECT is accepted then).
    public mutating func next(level: MQTT.Level?) throws(MQTT.Failure) -> MQTT.Packet? {
        guard buffer.count - start >= 2 else { return nil }
        var length = 0, multiplier = 1, index = start + 1
        while true {
            guard index < buffer.count else { return nil }
            let byte = buffer[index]
            length += Int(byte & 0x7F) * multiplier
            index += 1
            if byte & 0x80 == 0 { break }
            multiplier *= 128
            guard multiplier <= 128 * 128 * 128 else { throw .malformed("the remaining length takes more than four bytes") }
        }
        let headerLength = index - start
        guard headerLength + length <= maxPacketSize else {
            throw MQTT.Failure(MQTT.ReasonCode.packetTooLarge, "a packet of \(headerLength + length) bytes; at most \(maxPacketSize)")
        }
        guard buffer.count - index >= length else { return nil }
        let first = buffer[start]
        let body = buffer[index..<(index + length)]
        start = index + length
        var fields = Fields(body)
        let packet = try Self.parse(type: first >> 4, flags: first & 0x0F, &fields, level: level)
        if start > 64 * 1024 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        return packet
    }

    private static func parse(type: UInt8, flags: UInt8, _ fields: inout Fields, level: MQTT.Level?) throws(MQTT.Failure) -> MQTT.Packet {
        guard let level else {
            guard type == 1 else { throw .protocolError("the first packet must be CONNECT") }
            guard flags == 0 else { throw .malformed("CONNECT's reserved flags are set") }
            return .connect(try connect(&fields))
        }
        switch type {
        case 1:
            throw .protocolError("a second CONNECT")
        case 3:
            return .publish(try publish(flags: flags, &fields, level: level))
        case 8, 10:
            guard flags == 0b0010 else { throw .malformed("\(type == 8 ? "SUBSCRIBE" : "UNSUBSCRIBE")'s reserved flags must be 0010") }
            let id = try fields.uint16()
            guard id != 0 else { throw .malformed("a packet identifier of 0") }
            if level == .v5 { try fields.properties() }
            var topics = 0
            while !fields.isEmpty {
                _ = try fields.string()
                if type == 8 { _ = try fields.byte() }
                topics += 1
            }
            guard topics > 0 else { throw .protocolError("\(type == 8 ? "SUBSCRIBE" : "UNSUBSCRIBE") with no topic") }
            return type == 8 ? .subscribe(packetID: id, topics: topics) : .unsubscribe(packetID: id, topics: topics)
        case 12:
            guard flags == 0, fields.isEmpty else { throw .malformed("PINGREQ carries nothing") }
            return .pingRequest
        case 14:
            guard flags == 0 else { throw .malformed("DISCONNECT's reserved flags are set") }
            var reason = MQTT.ReasonCode.success
            if level == .v5 && !fields.isEmpty {
                reason = try fields.byte()
                if !fields.isEmpty { try fields.properties() }
            }
            guard fields.isEmpty else { throw .malformed("DISCONNECT carries more than it should") }
            return .disconnect(reason: reason)
        case 4, 5, 6, 7, 15:
            return .unexpected(type: type)
        default:
            throw .malformed("packet type \(type) is not one a client sends")
        }
    }

    private static func connect(_ fields: inout Fields) throws(MQTT.Failure) -> MQTT.Connect {
        let name = try fields.string()
        let levelByte = try fields.byte()
        guard name == "MQTT" || name == "MQIsdp" else { throw .protocolError("the protocol name is not MQTT") }
        guard name == "MQTT", let level = MQTT.Level(rawValue: levelByte) else {
            throw MQTT.Failure(MQTT.ReasonCode.unsupportedProtocolVersion, "protocol level \(levelByte); this server speaks 4 (3.1.1) and 5",
                               connackV311: 1)
        }
        let flags = try fields.byte()
        guard flags & 0x01 == 0 else { throw .malformed("CONNECT's reserved flag is set") }
        let hasWill = flags & 0x04 != 0, willQoS = (flags >> 3) & 0x03, willRetain = flags & 0x20 != 0
        let hasPassword = flags & 0x40 != 0, hasUsername = flags & 0x80 != 0
        guard willQoS < 3 else { throw .malformed("a will QoS of 3") }
        guard hasWill || (willQoS == 0 && !willRetain) else { throw .malformed("will QoS or retain without a will") }
        guard level == .v5 || hasUsername || !hasPassword else { throw .protocolError("a password without a user name (3.1.1)") }
        let keepAlive = try fields.uint16()
        if level == .v5 { try fields.properties() }
        let clientID = try fields.string()
        var will: MQTT.Will?
        if hasWill {
            if level == .v5 { try fields.properties() }
            let topic = try fields.string()
            will = MQTT.Will(topic: topic, payload: try fields.binary(), qos: willQoS, retain: willRetain)
        }
        let username = hasUsername ? try fields.string() : nil
        let password = hasPassword ? try fields.binary() : nil
        guard fields.isEmpty else { throw .malformed("CONNECT carries more than its flags say") }
        return MQTT.Connect(level: level, clientID: clientID, cleanStart: flags & 0x02 != 0, keepAlive: keepAlive, username: username,
                            password: password, will: will)
    }

    private static func publish(flags: UInt8, _ fields: inout Fields, level: MQTT.Level) throws(MQTT.Failure) -> MQTT.Publish {
        let qos = (flags >> 1) & 0x03
        guard qos != 3 else { throw .malformed("a PUBLISH of QoS 3") }
        guard qos != 2 else { throw MQTT.Failure(MQTT.ReasonCode.qosNotSupported, "QoS 2 is not supported; publish at QoS 0 or 1") }
        let duplicate = flags & 0x08 != 0
        guard qos > 0 || !duplicate else { throw .malformed("DUP set on a QoS 0 PUBLISH") }
        let topic = try fields.string()
        guard !topic.isEmpty else { throw .protocolError("a PUBLISH with no topic (topic aliases are not accepted)") }
        guard !topic.contains("+") && !topic.contains("#") else { throw .malformed("a wildcard in a PUBLISH topic") }
        var packetID: UInt16?
        if qos > 0 {
            let id = try fields.uint16()
            guard id != 0 else { throw .malformed("a packet identifier of 0") }
            packetID = id
        }
        if level == .v5 {
            guard !(try fields.properties()).contains(0x23) else { throw .protocolError("a topic alias (this server's maximum is 0)") }
        }
        return MQTT.Publish(topic: topic, payload: fields.rest(), qos: qos, retain: flags & 0x01 != 0, duplicate: duplicate, packetID: packetID)
    }
}

/// A packet's variable header and payload, read front to back.
private struct Fields {
    private let bytes: ArraySlice<UInt8>
    private var index: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        index = bytes.startIndex
    }

    var isEmpty: Bool { index == bytes.endIndex }

    mutating func byte() throws(MQTT.Failure) -> UInt8 {
        guard index < bytes.endIndex else { throw .malformed("the packet ends early") }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func uint16() throws(MQTT.Failure) -> UInt16 {
        UInt16(try byte()) << 8 | UInt16(try byte())
    }

    mutating func uint32() throws(MQTT.Failure) -> UInt32 {
        UInt32(try uint16()) << 16 | UInt32(try uint16())
    }

    mutating func variableInteger() throws(MQTT.Failure) -> Int {
        var value = 0, multiplier = 1
        for _ in 0..<4 {
            let byte = try byte()
            value += Int(byte & 0x7F) * multiplier
            if byte & 0x80 == 0 { return value }
            multiplier *= 128
        }
        throw .malformed("a variable byte integer of more than four bytes")
    }

    mutating func binary() throws(MQTT.Failure) -> [UInt8] {
        let count = Int(try uint16())
        guard bytes.endIndex - index >= count else { throw .malformed("the packet ends inside a field") }
        defer { index += count }
        return Array(bytes[index..<(index + count)])
    }

    /// A UTF-8 string: well-formed, without U+0000 (both standards, 1.5.3/1.5.4).
    mutating func string() throws(MQTT.Failure) -> String {
        let raw = try binary()
        guard let text = String(validating: raw, as: UTF8.self), !raw.contains(0) else { throw .malformed("a string that is not UTF-8, or holds U+0000") }
        return text
    }

    mutating func rest() -> [UInt8] {
        defer { index = bytes.endIndex }
        return Array(bytes[index...])
    }

    /// MQTT 5 properties: read whole (each identifier with its own type), so a malformed block
    /// is refused; the identifiers seen.
    @discardableResult
    mutating func properties() throws(MQTT.Failure) -> [UInt8] {
        let length = try variableInteger()
        guard bytes.endIndex - index >= length else { throw .malformed("properties longer than the packet") }
        let end = index + length
        var seen: [UInt8] = []
        while index < end {
            let identifier = try byte()
            switch identifier {
            case 0x01, 0x17, 0x19, 0x24, 0x25, 0x28, 0x29, 0x2A: _ = try byte()
            case 0x13, 0x21, 0x22, 0x23: _ = try uint16()
            case 0x02, 0x11, 0x18, 0x27: _ = try uint32()
            case 0x0B: _ = try variableInteger()
            case 0x03, 0x08, 0x12, 0x15, 0x1A, 0x1C, 0x1F: _ = try string()
            case 0x09, 0x16: _ = try binary()
            case 0x26: _ = (try string(), try string())
            default: throw .malformed("unknown property 0x\(String(identifier, radix: 16))")
            }
            seen.append(identifier)
        }
        guard index == end else { throw .malformed("a property runs past its block") }
        return seen
    }
}
