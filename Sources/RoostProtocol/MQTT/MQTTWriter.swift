/// The packets this server sends, as bytes: CONNACK, PUBACK, SUBACK and UNSUBACK (refusals),
/// PINGRESP, and 5.0's DISCONNECT with a reason.
public enum MQTTWriter {
    /// What a CONNACK of 5.0 tells the client about this server.
    public struct ServerLimits: Sendable {
        public var maxPacketSize: Int
        /// How many QoS 1 publications may await their PUBACK at once.
        public var receiveMaximum: Int
        /// The identifier the server gives a client that sent an empty one (5.0).
        public var assignedClientID: String?

        public init(maxPacketSize: Int, receiveMaximum: Int, assignedClientID: String? = nil) {
            (self.maxPacketSize, self.receiveMaximum, self.assignedClientID) = (maxPacketSize, receiveMaximum, assignedClientID)
        }
    }

    /// A CONNACK. `code` is 5.0's reason code; for 3.1.1 the return code (`v311Code`) is
    /// derived from it unless given.
    public static func connack(level: MQTT.Level, code: UInt8, v311Code: UInt8? = nil, limits: ServerLimits? = nil, reason: String? = nil) -> [UInt8] {
        switch level {
        case .v311:
            return [0x20, 2, 0, v311Code ?? v311ConnectCode(code)]
        case .v5:
            var properties: [UInt8] = []
            if let limits, code == MQTT.ReasonCode.success {
                properties += [0x24, 1]  // Maximum QoS: 1
                properties += [0x28, 0, 0x29, 0, 0x2A, 0]  // no wildcard, identifier or shared subscriptions
                properties += [0x21] + uint16(UInt16(clamping: limits.receiveMaximum))
                properties += [0x27] + uint32(UInt32(clamping: limits.maxPacketSize))
                if let id = limits.assignedClientID { properties += [0x12] + string(id) }
            }
            if let reason { properties += [0x1F] + string(reason) }
            return packet(0x20, [0, code] + variableInteger(properties.count) + properties)
        }
    }

    /// 3.1.1's CONNACK return code for a 5.0 reason code.
    static func v311ConnectCode(_ code: UInt8) -> UInt8 {
        switch code {
        case MQTT.ReasonCode.success: 0
        case MQTT.ReasonCode.unsupportedProtocolVersion: 1
        case MQTT.ReasonCode.clientIdentifierNotValid: 2
        case MQTT.ReasonCode.badUserNameOrPassword: 4
        case MQTT.ReasonCode.notAuthorized: 5
        default: 3  // server unavailable
        }
    }

    public static func puback(_ packetID: UInt16, level: MQTT.Level, code: UInt8 = MQTT.ReasonCode.success) -> [UInt8] {
        level == .v5 && code != MQTT.ReasonCode.success ? packet(0x40, uint16(packetID) + [code, 0]) : packet(0x40, uint16(packetID))
    }

    /// Every subscription refused: this server is no broker.
    public static func suback(_ packetID: UInt16, topics: Int, level: MQTT.Level) -> [UInt8] {
        let code: UInt8 = level == .v5 ? MQTT.ReasonCode.subscriptionRefused : 0x80
        return packet(0x90, uint16(packetID) + (level == .v5 ? [0] : []) + [UInt8](repeating: code, count: topics))
    }

    public static func unsuback(_ packetID: UInt16, topics: Int, level: MQTT.Level) -> [UInt8] {
        // 5.0: 0x11, no subscription existed.
        level == .v5 ? packet(0xB0, uint16(packetID) + [0] + [UInt8](repeating: 0x11, count: topics)) : packet(0xB0, uint16(packetID))
    }

    public static let pingResponse: [UInt8] = [0xD0, 0]

    /// 5.0's DISCONNECT from the server, with its reason code and words.
    public static func disconnect(code: UInt8, reason: String) -> [UInt8] {
        let properties = [0x1F] + string(String(reason.prefix(200)))
        return packet(0xE0, [code] + variableInteger(properties.count) + properties)
    }

    // MARK: - Encodings

    static func packet(_ first: UInt8, _ body: [UInt8]) -> [UInt8] {
        [first] + variableInteger(body.count) + body
    }

    static func variableInteger(_ value: Int) -> [UInt8] {
        var value = value, bytes: [UInt8] = []
        repeat {
            var byte = UInt8(value % 128)
            value /= 128
            if value > 0 { byte |= 0x80 }
            bytes.append(byte)
        } while value > 0
        return bytes
    }

    static func uint16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    static func uint32(_ value: UInt32) -> [UInt8] { uint16(UInt16(value >> 16)) + uint16(UInt16(value & 0xFFFF)) }
    static func string(_ text: String) -> [UInt8] { uint16(UInt16(text.utf8.count)) + Array(text.utf8) }
}
