import Foundation
import RoostHTTP
import RoostProtocol

/// One TCP connection of an alarm panel, on its event loop. Frames (LF to CR) are answered one
/// at a time in the order they came; while one is being taken, reading stops, so a panel that
/// sends faster than its messages commit is held back by TCP. Bytes before an LF are skipped
/// (a panel's line noise); a frame longer than DC-09's limit is answered NAK and skipped. A
/// connection quiet for the idle limit is closed.
///
/// `@unchecked Sendable`: touched only on its loop; answers come back through `channel.onLoop`.
final class DC09Session: TCPSession, @unchecked Sendable {
    private let channel: TCPChannel
    private let receiver: DC09Receiver
    private var buffer: [UInt8] = []
    /// Inside a frame (an LF was read): its bytes are in `buffer`.
    private var inFrame = false
    private var frames: [[UInt8]] = []
    private var working = false
    private var ended = false
    private var lastHeardAt: UInt64
    private var idleTimer: UInt64?

    init(channel: TCPChannel, receiver: DC09Receiver) {
        self.channel = channel
        self.receiver = receiver
        lastHeardAt = channel.now
        watchIdle()
    }

    func received(_ bytes: UnsafeRawBufferPointer) {
        guard !ended else { return }
        lastHeardAt = channel.now
        for byte in bytes {
            if byte == 0x0A {
                // A new frame starts; a frame left open before it was damaged.
                if inFrame { frames.append([]) }
                buffer = [0x0A]
                inFrame = true
            } else if inFrame {
                buffer.append(byte)
                if byte == 0x0D {
                    frames.append(buffer)
                    (buffer, inFrame) = ([], false)
                } else if buffer.count > DC09.maxFrameBytes {
                    frames.append([])
                    (buffer, inFrame) = ([], false)
                }
            }
        }
        if frames.count >= 4 { channel.setReading(false) }
        work()
    }

    private func work() {
        guard !working, !ended, !frames.isEmpty else { return }
        working = true
        let frame = frames.removeFirst(), receiver = self.receiver, peer = channel.peer
        Task { [self] in
            let reply = await receiver.answer(frame, from: peer, transport: .tcp)
            channel.onLoop { [self] in answered(reply) }
        }
    }

    private func answered(_ reply: [UInt8]?) {
        working = false
        guard !ended else { return }
        if let reply { channel.send(reply) }
        if frames.count < 4 { channel.setReading(true) }
        work()
    }

    private func watchIdle() {
        let limit = UInt64(receiver.limits.idleMilliseconds) * 1_000_000
        let quiet = channel.now &- lastHeardAt
        guard quiet < limit || working else {
            end()
            return
        }
        // A frame being taken keeps the connection: look again a whole limit later.
        let wait = quiet < limit ? limit - quiet : limit
        idleTimer = channel.after(milliseconds: Int(wait / 1_000_000) + 1) { [weak self] in self?.watchIdle() }
    }

    private func end() {
        guard !ended else { return }
        ended = true
        if let idleTimer { channel.cancel(idleTimer) }
        channel.close()
    }

    func ended(byPeer: Bool) {
        ended = true
        if let idleTimer { channel.cancel(idleTimer) }
    }
}
