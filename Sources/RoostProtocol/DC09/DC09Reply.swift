import Foundation

/// The receiver's answers, framed as DC-09 frames are: `ACK` (an encrypted message gets
/// `*ACK`, its `]` and timestamp encrypted after padding, as the message was), `NAK` with the
/// receiver's time (a frame it could not read, or whose timestamp is outside the window: the
/// panel may set its clock by it), and `DUH` (read, but not something it can take).
public enum DC09Reply {
    /// `ACK`, echoing the frame's sequence, receiver (only when it sent one), line and account.
    /// `key` encrypts it when the frame was encrypted; `padding` gives the random padding
    /// characters (injected so a test can fix them).
    public static func ack(_ header: DC09.Header, key: [UInt8]?, now: Date,
                           padding: (Int) -> [UInt8] = DC09Reply.randomPadding) -> [UInt8] {
        var body = (header.encrypted ? "\"*ACK\"" : "\"ACK\"") + address(header) + "["
        if header.encrypted, let key {
            let tail = Array(("|]_" + DC09.timestamp(now)).utf8)
            // At least one padding character, and whole 16-byte blocks.
            let plain = padding(16 - tail.count % 16) + tail
            guard let cipher = AESCBC.crypt(plain, key: key, encrypt: true) else { return nak(now: now) }
            body += cipher.map { String(format: "%02X", $0) }.joined()
        } else {
            body += "]"
        }
        return frame(body)
    }

    /// `NAK` with the receiver's time: `"NAK"0000R0L0#0[]_HH:MM:SS,MM-DD-YYYY`.
    public static func nak(now: Date) -> [UInt8] {
        frame("\"NAK\"0000R0L0#0[]_" + DC09.timestamp(now))
    }

    /// `DUH`: the message was read and cannot be taken (an unknown account, a key that does
    /// not fit, an event it does not know).
    public static func duh(_ header: DC09.Header) -> [UInt8] {
        frame("\"DUH\"" + address(header) + "[]")
    }

    private static func address(_ header: DC09.Header) -> String {
        header.sequence + (header.receiver.map { "R" + $0 } ?? "") + "L" + header.line + "#" + header.account
    }

    /// LF, the CRC and the length in hex, the body, CR.
    static func frame(_ body: String) -> [UInt8] {
        let bytes = Array(body.utf8)
        return [0x0A] + Array(String(format: "%04X%04X", DC09.crc16(bytes), bytes.count).utf8) + bytes + [0x0D]
    }

    /// Printable padding that is none of `[`, `]` and `|`.
    public static func randomPadding(_ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        while out.count < count {
            let byte = UInt8.random(in: 0x21...0x7E)
            if byte != UInt8(ascii: "[") && byte != UInt8(ascii: "]") && byte != UInt8(ascii: "|") { out.append(byte) }
        }
        return out
    }
}
