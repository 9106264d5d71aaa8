/// The few MQTT 3.1.1 packets the mosquitto side of the benchmark needs (OASIS MQTT 3.1.1
/// §2–3): CONNECT, SUBSCRIBE and PUBLISH at QoS 0 out; CONNACK, SUBACK and PUBLISH in.
enum MQTT {
    static let connack: UInt8 = 2, publish: UInt8 = 3, suback: UInt8 = 9, pingresp: UInt8 = 13

    /// CONNECT with a clean session, no credentials and no keep-alive (idle connections stay).
    static func connect(clientID: String) -> [UInt8] {
        var body: [UInt8] = string("MQTT") + [4, 0x02, 0, 0]  // level 4 (3.1.1), clean session, keep-alive 0
        body += string(clientID)
        return packet(0x10, body)
    }

    static func subscribe(_ topic: String, packetID: UInt16 = 1) -> [UInt8] {
        packet(0x82, [UInt8(packetID >> 8), UInt8(packetID & 0xFF)] + string(topic) + [0])  // QoS 0
    }

    static func publish(_ topic: String, _ payload: [UInt8]) -> [UInt8] {
        packet(0x30, string(topic) + payload)  // QoS 0: no packet id
    }

    static func string(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        return [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
    }

    static func packet(_ header: UInt8, _ body: [UInt8]) -> [UInt8] {
        var bytes = [header]
        var length = body.count
        repeat {  // remaining length: 7 bits a byte, high bit = more follows
            var byte = UInt8(length % 128)
            length /= 128
            if length > 0 { byte |= 0x80 }
            bytes.append(byte)
        } while length > 0
        return bytes + body
    }

    /// Splits a byte stream into packets: (type, body).
    struct Reader {
        private var buffer: [UInt8] = []
        private var start = 0

        mutating func feed(_ bytes: [UInt8]) {
            if start > 0 && start == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                start = 0
            }
            buffer += bytes
        }

        mutating func next() -> (type: UInt8, body: ArraySlice<UInt8>)? {
            var length = 0, multiplier = 1, index = start + 1
            while true {
                guard index < buffer.count else { return nil }
                length += Int(buffer[index] & 0x7F) * multiplier
                multiplier *= 128
                index += 1
                if buffer[index - 1] & 0x80 == 0 { break }
            }
            guard buffer.count - index >= length else { return nil }
            let type = buffer[start] >> 4
            let body = buffer[index..<(index + length)]
            start = index + length
            if start > 65_536 {  // keep the buffer from growing without bound
                buffer.removeFirst(start)
                start = 0
                return (type, ArraySlice(Array(body)))
            }
            return (type, body)
        }
    }

    /// A PUBLISH body's payload (QoS 0: topic, then payload).
    static func payload(ofPublish body: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard body.count >= 2 else { return [] }
        let topicLength = Int(body[body.startIndex]) << 8 | Int(body[body.startIndex + 1])
        return body.dropFirst(2 + topicLength)
    }
}
