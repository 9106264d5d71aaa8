import RoostProtocol
import RoostTestSupport
import Testing

/// MQTTReader and MQTTWriter against packets written out byte by byte from the 3.1.1 and 5.0
/// standards (the CONNECT examples of 3.1.1 §3.1.2.10 and 5.0 §3.1.2.11, their fixed headers,
/// remaining lengths and properties). Real clients (paho-mqtt, mosquitto) are in the end-to-end
/// tests.
struct MQTTCodecTests {
    static func string(_ text: String) -> [UInt8] { MQTTTestPackets.string(text) }
    static func packet(_ first: UInt8, _ body: [UInt8]) -> [UInt8] { MQTTTestPackets.packet(first, body) }

    /// 3.1.1: clean session, a will at QoS 1, user name and password, keep-alive 60.
    static let connect311 = packet(0x10, string("MQTT") + [0x04, 0b1100_1110, 0x00, 0x3C] + string("frigate")
                                   + string("frigate/available") + string("offline") + string("frigate") + string("rbk_key"))

    static func read(_ bytes: [UInt8], level: MQTT.Level? = nil, limit: Int = 4096) throws(MQTT.Failure) -> [MQTT.Packet] {
        var reader = MQTTReader(maxPacketSize: limit)
        reader.append(bytes)
        var packets: [MQTT.Packet] = []
        var level = level
        while let packet = try reader.next(level: level) {
            if case .connect(let connect) = packet { level = connect.level }
            packets.append(packet)
        }
        return packets
    }

    @Test func aConnectOf311WithAWillAndAPublicationAtQoS1AreReadWhole() throws {
        let publish = Self.packet(0x32, Self.string("frigate/reviews") + [0x00, 0x0A] + Array(#"{"type":"new"}"#.utf8))
        let packets = try Self.read(Self.connect311 + publish + [0xC0, 0x00, 0xE0, 0x00])
        guard case .connect(let connect) = packets[0] else { Issue.record("\(packets)"); return }
        #expect(connect.level == .v311 && connect.clientID == "frigate" && connect.cleanStart && connect.keepAlive == 60)
        #expect(connect.username == "frigate" && connect.password == Array("rbk_key".utf8))
        #expect(connect.will == MQTT.Will(topic: "frigate/available", payload: Array("offline".utf8), qos: 1, retain: false))
        #expect(packets[1] == .publish(MQTT.Publish(topic: "frigate/reviews", payload: Array(#"{"type":"new"}"#.utf8), qos: 1, retain: false,
                                                     duplicate: false, packetID: 10)))
        #expect(Array(packets[2...]) == [.pingRequest, .disconnect(reason: 0)])
    }

    @Test func aConnectOf5WithPropertiesAndAnEmptyClientIDIsReadAndAnsweredWithLimits() throws {
        // Session Expiry Interval (0x11, four bytes) and Receive Maximum (0x21, two) as properties.
        let connect = Self.packet(0x10, Self.string("MQTT") + [0x05, 0b1100_0010, 0x00, 0x1E, 0x08, 0x11, 0, 0, 0, 0x3C, 0x21, 0, 0x10]
                                  + Self.string("") + Self.string("u") + Self.string("rbk_key"))
        // A v5 PUBLISH at QoS 1 with a Payload Format Indicator property.
        let publish = Self.packet(0x32, Self.string("home/alarm/state") + [0x00, 0x02, 0x02, 0x01, 0x01] + Array("triggered".utf8))
        let packets = try Self.read(connect + publish)
        guard case .connect(let read) = packets[0], case .publish(let message) = packets[1] else { Issue.record("\(packets)"); return }
        #expect(read.level == .v5 && read.clientID.isEmpty && read.keepAlive == 30 && read.will == nil)
        #expect(message.payload == Array("triggered".utf8) && message.packetID == 2)
        let connack = MQTTWriter.connack(level: .v5, code: 0, limits: .init(maxPacketSize: 65536, receiveMaximum: 16, assignedClientID: "roost-1"))
        // Fixed header, flags, reason 0, then properties: Maximum QoS 1 first.
        #expect(connack[0] == 0x20 && Int(connack[1]) == connack.count - 2 && connack[2] == 0 && connack[3] == 0 && Array(connack[5...6]) == [0x24, 1])
        #expect(MQTTWriter.connack(level: .v311, code: 0) == [0x20, 2, 0, 0])
        #expect(MQTTWriter.connack(level: .v311, code: MQTT.ReasonCode.badUserNameOrPassword) == [0x20, 2, 0, 4])
        #expect(MQTTWriter.puback(0x1234, level: .v311) == [0x40, 2, 0x12, 0x34])
        #expect(MQTTWriter.puback(0x1234, level: .v5, code: 0x99) == [0x40, 4, 0x12, 0x34, 0x99, 0])
        #expect(MQTTWriter.suback(5, topics: 2, level: .v311) == [0x90, 4, 0, 5, 0x80, 0x80])
        #expect(MQTTWriter.pingResponse == [0xD0, 0])
    }

    @Test func whatTheStandardsRefuseIsRefusedWithTheRightReason() {
        func failure(_ bytes: [UInt8], level: MQTT.Level? = nil, limit: Int = 4096) -> MQTT.Failure? {
            do {
                _ = try Self.read(bytes, level: level, limit: limit)
                return nil
            } catch {
                return error
            }
        }
        // Not CONNECT first; a second CONNECT.
        #expect(failure([0xC0, 0x00])?.code == MQTT.ReasonCode.protocolError)
        #expect(failure(Self.connect311 + Self.connect311)?.code == MQTT.ReasonCode.protocolError)
        // Protocol level 3 (MQTT 3.1's MQIsdp) and 6: 3.1.1's CONNACK return code 1.
        let old = Self.packet(0x10, Self.string("MQIsdp") + [0x03, 0x02, 0x00, 0x3C] + Self.string("x"))
        #expect(failure(old)?.connackV311 == 1)
        let future = Self.packet(0x10, Self.string("MQTT") + [0x06, 0x02, 0x00, 0x3C] + Self.string("x"))
        #expect(failure(future)?.code == MQTT.ReasonCode.unsupportedProtocolVersion)
        // CONNECT's reserved flag; a remaining length of five bytes; QoS 2 and 3; a wildcard; packet id 0.
        #expect(failure(Self.packet(0x10, Self.string("MQTT") + [0x04, 0x03, 0x00, 0x3C] + Self.string("x")))?.code == MQTT.ReasonCode.malformedPacket)
        #expect(failure([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], level: .v311)?.code == MQTT.ReasonCode.malformedPacket)
        #expect(failure(Self.packet(0x34, Self.string("t") + [0, 1]), level: .v311)?.code == MQTT.ReasonCode.qosNotSupported)
        #expect(failure(Self.packet(0x36, Self.string("t") + [0, 1]), level: .v311)?.code == MQTT.ReasonCode.malformedPacket)
        #expect(failure(Self.packet(0x30, Self.string("a/#")), level: .v311)?.code == MQTT.ReasonCode.malformedPacket)
        #expect(failure(Self.packet(0x32, Self.string("t") + [0, 0]), level: .v311)?.code == MQTT.ReasonCode.malformedPacket)
        // A string that is not UTF-8, or holds U+0000.
        #expect(failure(Self.packet(0x30, [0, 2, 0xC3, 0x28]), level: .v311)?.code == MQTT.ReasonCode.malformedPacket)
        #expect(failure(Self.packet(0x30, [0, 2, 0x61, 0x00]), level: .v311)?.code == MQTT.ReasonCode.malformedPacket)
        // A topic alias (5.0) and an unknown property.
        #expect(failure(Self.packet(0x30, Self.string("t") + [0x03, 0x23, 0x00, 0x01]), level: .v5)?.code == MQTT.ReasonCode.protocolError)
        #expect(failure(Self.packet(0x30, Self.string("t") + [0x01, 0x7F]), level: .v5)?.code == MQTT.ReasonCode.malformedPacket)
        // Past the size limit, refused from the length alone: no body needed.
        #expect(failure([0x30, 0x80, 0x80, 0x01], level: .v311, limit: 1000)?.code == MQTT.ReasonCode.packetTooLarge)
        // A packet only a server sends.
        #expect(failure([0x20, 0x02, 0x00, 0x00], level: .v311)?.code == MQTT.ReasonCode.malformedPacket)
    }

    @Test func aPacketArrivingAByteAtATimeIsReadOnceWhole() throws {
        var reader = MQTTReader(maxPacketSize: 4096)
        var packets: [MQTT.Packet] = []
        for byte in Self.connect311 + [0xC0, 0x00] {
            reader.append([byte])
            while let packet = try reader.next(level: packets.isEmpty ? nil : .v311) { packets.append(packet) }
        }
        #expect(packets.count == 2 && packets.last == .pingRequest && reader.buffered == 0)
    }
}
