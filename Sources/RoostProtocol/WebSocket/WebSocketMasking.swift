/// The XOR masking of RFC 6455 §5.3, eight bytes at a time.
public enum WebSocketMasking {
    /// XORs `bytes` in place with the 4-byte `key`, starting at `offset` bytes into the
    /// frame's payload (so a payload unmasked piece by piece continues the key's phase).
    public static func apply(key: UInt32, offset: Int, to bytes: UnsafeMutableRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        // The key as it applies from `offset`: rotate so byte 0 of the slice gets key[offset % 4].
        let shift = UInt32((offset & 3) * 8)
        let rotated = shift == 0 ? key : (key >> shift) | (key << (32 - shift))
        let word = (UInt64(rotated) | UInt64(rotated) << 32).littleEndian
        var index = 0
        let count = bytes.count
        while index + 8 <= count {
            let value = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            bytes.storeBytes(of: value ^ word, toByteOffset: index, as: UInt64.self)
            index += 8
        }
        var remaining = rotated
        while index < count {
            bytes[index] ^= UInt8(truncatingIfNeeded: remaining)
            remaining = remaining >> 8 | remaining << 24
            index += 1
        }
    }

    /// The key as four wire bytes read little-endian, matching how `apply` consumes it.
    public static func key(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) -> UInt32 {
        UInt32(b0) | UInt32(b1) << 8 | UInt32(b2) << 16 | UInt32(b3) << 24
    }
}
