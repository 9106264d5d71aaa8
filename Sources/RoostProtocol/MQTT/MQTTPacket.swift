/// MQTT 3.1.1 (OASIS, 2014) and 5.0 (OASIS, 2019), the part a server that only takes
/// publications needs: the packets a client sends, read by `MQTTReader`, and the answers
/// `MQTTWriter` builds. Pure: bytes in, values out, no I/O.
public enum MQTT {
    /// The protocol level of CONNECT: 4 is 3.1.1, 5 is 5.0.
    public enum Level: UInt8, Sendable {
        case v311 = 4
        case v5 = 5
    }

    public struct Will: Equatable, Sendable {
        public let topic: String
        public let payload: [UInt8]
        public let qos: UInt8
        public let retain: Bool

        public init(topic: String, payload: [UInt8], qos: UInt8, retain: Bool) {
            (self.topic, self.payload, self.qos, self.retain) = (topic, payload, qos, retain)
        }
    }

    public struct Connect: Equatable, Sendable {
        public let level: Level
        public let clientID: String
        public let cleanStart: Bool
        /// Seconds; 0 is none.
        public let keepAlive: UInt16
        public let username: String?
        public let password: [UInt8]?
        public let will: Will?
    }

    public struct Publish: Equatable, Sendable {
        public let topic: String
        public let payload: [UInt8]
        public let qos: UInt8
        public let retain: Bool
        public let duplicate: Bool
        /// Present for QoS 1.
        public let packetID: UInt16?

        public init(topic: String, payload: [UInt8], qos: UInt8, retain: Bool, duplicate: Bool, packetID: UInt16?) {
            (self.topic, self.payload, self.qos, self.retain, self.duplicate, self.packetID) = (topic, payload, qos, retain, duplicate, packetID)
        }
    }

    public enum Packet: Equatable, Sendable {
        case connect(Connect)
        case publish(Publish)
        case subscribe(packetID: UInt16, topics: Int)
        case unsubscribe(packetID: UInt16, topics: Int)
        case pingRequest
        /// The client's DISCONNECT; in 5.0, with its reason code (0x04: send the will anyway).
        case disconnect(reason: UInt8)
        /// PUBACK, PUBREC, PUBREL, PUBCOMP or AUTH: packets this server never asks for.
        case unexpected(type: UInt8)
    }

    /// Why a connection must end. `code` is MQTT 5's reason code for the DISCONNECT (or
    /// CONNACK) that says so; a 3.1.1 connection is closed without one, except where 3.1.1 has
    /// a CONNACK return code (`connackV311`).
    public struct Failure: Error, Equatable, Sendable {
        public let code: UInt8
        public let reason: String
        public var connackV311: UInt8? = nil

        public init(_ code: UInt8, _ reason: String, connackV311: UInt8? = nil) {
            (self.code, self.reason, self.connackV311) = (code, reason, connackV311)
        }

        public static func malformed(_ reason: String) -> Failure { Failure(ReasonCode.malformedPacket, reason) }
        public static func protocolError(_ reason: String) -> Failure { Failure(ReasonCode.protocolError, reason) }
    }

    /// MQTT 5 reason codes this server uses (3.1.1 return codes are said where they differ).
    public enum ReasonCode {
        public static let success: UInt8 = 0x00
        public static let unspecifiedError: UInt8 = 0x80
        public static let malformedPacket: UInt8 = 0x81
        public static let protocolError: UInt8 = 0x82
        public static let unsupportedProtocolVersion: UInt8 = 0x84
        public static let clientIdentifierNotValid: UInt8 = 0x85
        public static let badUserNameOrPassword: UInt8 = 0x86
        public static let notAuthorized: UInt8 = 0x87
        public static let serverBusy: UInt8 = 0x89
        public static let keepAliveTimeout: UInt8 = 0x8D
        public static let payloadFormatInvalid: UInt8 = 0x99
        public static let packetTooLarge: UInt8 = 0x95
        public static let quotaExceeded: UInt8 = 0x97
        public static let qosNotSupported: UInt8 = 0x9B
        public static let implementationSpecificError: UInt8 = 0x83
        /// SUBACK's "not authorized" (5.0) and 3.1.1's 0x80 failure.
        public static let subscriptionRefused: UInt8 = 0x87
    }
}
