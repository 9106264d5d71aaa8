/// MQTT packets written out byte by byte for the tests, apart from the codec under test: what a
/// good client library would send, and what none would.
public enum MQTTTestPackets {
    /// A UTF-8 string field: two bytes of length, then the bytes.
    public static func string(_ text: String) -> [UInt8] { [UInt8(text.utf8.count >> 8), UInt8(text.utf8.count & 0xFF)] + Array(text.utf8) }

    /// A packet: its first byte, the remaining length as a variable byte integer, the body.
    public static func packet(_ first: UInt8, _ body: [UInt8]) -> [UInt8] {
        var length: [UInt8] = [], remaining = body.count
        repeat {
            var byte = UInt8(remaining % 128)
            remaining /= 128
            if remaining > 0 { byte |= 0x80 }
            length.append(byte)
        } while remaining > 0
        return [first] + length + body
    }

    /// CONNECT with a user name and the password (a bridge key), clean; `level` 4 (3.1.1) or 5.
    public static func connect(key: String, keepAlive: UInt16 = 60, level: UInt8 = 4) -> [UInt8] {
        packet(0x10, string("MQTT") + [level, 0b1100_0010, UInt8(keepAlive >> 8), UInt8(keepAlive & 0xFF)] + (level == 5 ? [0] : [])
               + string("raw-test") + string("bridge") + string(key))
    }
}
