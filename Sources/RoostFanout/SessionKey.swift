import RoostProtocol

/// A session as the fanout knows it: its token's SHA-256, 32 bytes held inline. Every stream
/// keeps its session's; as the 64-digit hex `String` the database and the nodes' notices use,
/// it was an allocation of 112 bytes a stream.
public struct SessionKey: Hashable, Sendable, CustomStringConvertible {
    private let first: UInt64, second: UInt64, third: UInt64, fourth: UInt64

    /// The token hash's 32 bytes; nil for any other length.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        func word(_ start: Int) -> UInt64 { bytes[start..<start + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        (first, second, third, fourth) = (word(0), word(8), word(16), word(24))
    }

    /// The hash as 64 hex digits (either case); nil for anything else.
    public init?(hex: String) {
        guard let bytes = Digest.bytes(hex: hex) else { return nil }
        self.init(bytes: bytes)
    }

    /// The lowercase hex digits, as the database stores the hash.
    public var hex: String {
        Digest.hex([first, second, third, fourth].flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (56 - 8 * $0)) } })
    }

    public var description: String { "session \(hex.prefix(8))…" }
}
