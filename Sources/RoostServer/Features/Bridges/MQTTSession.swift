import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol

/// One MQTT connection of a bridge, on its event loop. CONNECT is authenticated (reading
/// stops meanwhile); publications are applied one at a time in the order they came, each QoS
/// 1 one answered by its PUBACK only after its alert committed (MQTT keeps PUBACKs in order);
/// while `inflight` of them wait, reading stops, so a fast client is held back by TCP rather
/// than buffered here. A publication that cannot be applied yet (rate limit, database away)
/// is tried again after a wait: it is never dropped while its connection lasts, and a client
/// that reconnects sends again what was not acknowledged.
///
/// `@unchecked Sendable`: touched only on its loop; work done elsewhere comes back through
/// `channel.onLoop`.
final class MQTTSession: TCPSession, @unchecked Sendable {
    private enum State { case awaitingConnect, authenticating, connected, ended }

    private let channel: TCPChannel
    private let service: MQTTBridges
    private var reader: MQTTReader
    private var state = State.awaitingConnect
    private var connect: MQTT.Connect?
    private var bridge: (tenant: UUID, bridge: Bridge)?
    private var queue: [MQTT.Publish] = []
    private var working = false
    private var timer: UInt64?
    private var lastPacketAt: UInt64 = 0
    private var lastHeartbeatAt: UInt64 = 0
    /// A DISCONNECT said goodbye: no will, no offline notice.
    private var saidGoodbye = false
    private var keepAliveExpired = false
    private var refusedOne = false

    init(channel: TCPChannel, service: MQTTBridges) {
        self.channel = channel
        self.service = service
        reader = MQTTReader(maxPacketSize: service.limits.maxPacketSize)
        lastPacketAt = channel.now
        timer = channel.after(milliseconds: service.limits.connectTimeoutMilliseconds) { [weak self] in
            guard let self, state == .awaitingConnect else { return }
            service.count(.connectTimeout)
            end()
        }
    }

    private var level: MQTT.Level? { connect?.level }

    // MARK: - Bytes in

    func received(_ bytes: UnsafeRawBufferPointer) {
        guard state != .ended else { return }
        reader.append(bytes)
        lastPacketAt = channel.now
        readPackets()
    }

    /// Reads what is buffered while the state allows it (not while CONNECT is being checked or
    /// too many publications wait).
    private func readPackets() {
        do {
            while state == .awaitingConnect || (state == .connected && queue.count < service.limits.inflight),
                  let packet = try reader.next(level: level) {
                handle(packet)
            }
        } catch {
            fail(error)
        }
    }

    private func handle(_ packet: MQTT.Packet) {
        switch packet {
        case .connect(let connect):
            authenticate(connect)
        case .publish(let publish):
            queue.append(publish)
            if queue.count >= service.limits.inflight { channel.setReading(false) }
            work()
        case .pingRequest:
            channel.send(MQTTWriter.pingResponse)
            heartbeat()
        case .subscribe(let id, let topics):
            channel.send(MQTTWriter.suback(id, topics: topics, level: level ?? .v311))
        case .unsubscribe(let id, let topics):
            channel.send(MQTTWriter.unsuback(id, topics: topics, level: level ?? .v311))
        case .disconnect(let reason):
            // 5.0's 0x04: "disconnect with will message".
            saidGoodbye = reason != 0x04
            end()
        case .unexpected(let type):
            fail(.protocolError("packet type \(type): this server sends no publications to acknowledge"))
        }
    }

    // MARK: - CONNECT

    private func authenticate(_ connect: MQTT.Connect) {
        self.connect = connect
        state = .authenticating
        channel.setReading(false)
        if let timer { channel.cancel(timer) }
        let key = connect.password.flatMap { String(validating: $0, as: UTF8.self) } ?? ""
        let service = self.service
        Task { [self] in
            let admitted = try? await service.bridges.admitDevice(key: key)
            channel.onLoop { [self] in authenticated(admitted) }
        }
    }

    private func authenticated(_ admitted: (UUID, Bridge)?) {
        guard state == .authenticating, let connect else { return }
        guard let (tenant, bridge) = admitted else {
            service.count(.badKey)
            refuse(MQTT.ReasonCode.badUserNameOrPassword, "the password must be a live bridge key of a bridge that does not sign")
            return
        }
        guard service.claimSlot(bridge.id) else {
            service.count(.tooMany)
            refuse(MQTT.ReasonCode.serverBusy, "this bridge key has \(service.limits.connectionsPerKey) connections already")
            return
        }
        self.bridge = (tenant, bridge)
        state = .connected
        service.count(.accepted)
        var limits = MQTTWriter.ServerLimits(maxPacketSize: service.limits.maxPacketSize, receiveMaximum: service.limits.inflight)
        if connect.clientID.isEmpty { limits.assignedClientID = "roost-" + bridge.id.lowercasedText }
        channel.send(MQTTWriter.connack(level: connect.level, code: MQTT.ReasonCode.success, limits: limits))
        lastHeartbeatAt = channel.now
        watchKeepAlive()
        channel.setReading(true)
        readPackets()
    }

    private func refuse(_ code: UInt8, _ reason: String) {
        channel.send(MQTTWriter.connack(level: level ?? .v311, code: code, reason: reason))
        saidGoodbye = true
        end()
    }

    // MARK: - Keep-alive

    /// MQTT's keep-alive: nothing from the client for one and a half times its interval ends
    /// the connection, and the bridge is announced offline.
    private func watchKeepAlive() {
        guard let keepAlive = connect?.keepAlive, keepAlive > 0 else { return }
        let limit = UInt64(keepAlive) * 1_500_000_000
        let quiet = channel.now &- lastPacketAt
        guard quiet < limit else {
            keepAliveExpired = true
            service.count(.keepAliveExpired)
            if level == .v5 { channel.send(MQTTWriter.disconnect(code: MQTT.ReasonCode.keepAliveTimeout, reason: "keep-alive expired")) }
            end()
            return
        }
        timer = channel.after(milliseconds: Int((limit - quiet) / 1_000_000) + 1) { [weak self] in self?.watchKeepAlive() }
    }

    /// A link test counts as the bridge's heartbeat, recorded at most every 30 s.
    private func heartbeat() {
        guard let (tenant, bridge) = bridge, channel.now &- lastHeartbeatAt >= 30_000_000_000 else { return }
        lastHeartbeatAt = channel.now
        let service = self.service
        Task { await service.heard(bridge, tenant: tenant) }
    }

    // MARK: - Publications

    private func work() {
        guard state == .connected, !working, let publish = queue.first, let (tenant, bridge) = bridge else { return }
        working = true
        let service = self.service, logRefusal = !refusedOne
        Task { [self] in
            let (outcome, retry) = await service.apply(publish, by: bridge, tenant: tenant, logRefusal: logRefusal)
            channel.onLoop { [self] in done(publish, outcome, retryAfter: retry) }
        }
    }

    private func done(_ publish: MQTT.Publish, _ outcome: MQTTBridges.Outcome, retryAfter: Int?) {
        service.count(outcome)
        if outcome == .invalid { refusedOne = true }
        guard state == .connected else { return }
        if let retryAfter {
            _ = channel.after(milliseconds: retryAfter) { [weak self] in
                self?.working = false
                self?.work()
            }
            return
        }
        if let id = publish.packetID {
            let code = outcome == .invalid ? MQTT.ReasonCode.payloadFormatInvalid : MQTT.ReasonCode.success
            channel.send(MQTTWriter.puback(id, level: level ?? .v311, code: code))
        }
        queue.removeFirst()
        working = false
        if queue.count < service.limits.inflight {
            channel.setReading(true)
            readPackets()
        }
        work()
    }

    // MARK: - The end

    private func fail(_ failure: MQTT.Failure) {
        service.count(failure.code == MQTT.ReasonCode.packetTooLarge ? .tooLarge : .protocolError)
        switch state {
        case .awaitingConnect, .authenticating:
            // Refused at CONNECT: a CONNACK where the standard has a code for it.
            if let code = failure.connackV311 ?? (level == .v5 ? failure.code : nil) {
                channel.send(MQTTWriter.connack(level: level ?? .v311, code: failure.code, v311Code: code, reason: failure.reason))
            }
        case .connected:
            if level == .v5 { channel.send(MQTTWriter.disconnect(code: failure.code, reason: failure.reason)) }
        case .ended:
            return
        }
        end()
    }

    private func end() {
        guard state != .ended else { return }
        state = .ended
        if let timer { channel.cancel(timer) }
        channel.close()
    }

    func ended(byPeer: Bool) {
        let wasConnected = bridge != nil
        state = .ended
        if let timer { channel.cancel(timer) }
        guard wasConnected, let (tenant, bridge) = bridge else { return }
        service.releaseSlot(bridge.id)
        // The will stands for the device's own word that it is gone; a keep-alive that ran out
        // says so whether it left a will or not.
        let why = keepAliveExpired ? "keep-alive expired" : "connection lost (will)"
        if keepAliveExpired || (!saidGoodbye && connect?.will != nil) {
            let service = self.service
            Task { await service.wentAway(bridge, tenant: tenant, why: why) }
        }
        self.bridge = nil
    }
}
