import Dispatch
import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
import Synchronization

/// Roost's SIA DC-09 receiver for alarm panels (`ROOST_DC09_LISTEN`, off by default; issue
/// #59, docs/BRIDGES.md "Alarm panels over DC-09"): TCP and UDP on one port. A frame names its
/// identity (receiver, line, account), which `dc09_identities` maps to one bridge of one
/// tenant; its events go through `DC09Effects` into the bridge's group in one transaction, and
/// the panel's `ACK` is sent only once that transaction committed. A resend of a taken message
/// is acknowledged again and raises nothing; a frame it cannot read gets `NAK` (with the
/// receiver's time), one it read and cannot take `DUH`; a panel past its rate gets no answer
/// (it sends again, and the resend is taken once there is room).
final class DC09Receiver: Sendable {
    struct Limits: Sendable {
        /// How far a frame's timestamp may be behind and ahead of the receiver's clock.
        var behindSeconds: TimeInterval = 40
        var aheadSeconds: TimeInterval = 20
        /// Refused frames (NAK, DUH, unknown accounts) a minute from one address, after a burst
        /// of `addressBurst`: past them the address gets no answer at all until its bucket
        /// refills, so a stranger guessing accounts or keys costs a lookup a second at most.
        /// Frames that are taken cost nothing here (panels behind one address, a security
        /// company's relay, are limited by their own bridges' rates).
        var refusalsPerAddressPerMinute = 60
        var addressBurst = 30
        /// A TCP connection that sends nothing this long is closed (panels reconnect).
        var idleMilliseconds = 300_000
        var maxConnections = 2000
        /// How long a taken sequence number marks a resend.
        var duplicateWindowSeconds = 3600
    }

    /// What a frame came to, counted on `/metrics` (`roost_dc09_messages_total{transport,outcome}`).
    enum Outcome: String, CaseIterable, Sendable {
        case ack
        /// A resend of a message already taken: acknowledged again, nothing raised.
        case duplicate
        case nak
        case duh
        case unknownAccount = "unknown_account"
        /// No answer: past the address's or the bridge's rate, or the database away.
        case unanswered
    }

    enum Transport: String, CaseIterable, Sendable { case tcp, udp }

    /// The receiver `roost serve` started, if any, for `/metrics`.
    static let running = Mutex<DC09Receiver?>(nil)

    let pool: ConnectionPool
    let bridges: BridgeAuthentication
    let limits: Limits
    let log: Log
    /// The receiver's clock for timestamps (a test's fixed time).
    let now: @Sendable () -> Date
    /// Refused frames a minute per address (`TokenBuckets.charge`), in memory on this node.
    private let addresses: TokenBuckets<String>
    private let counts = Mutex<[String: Int]>([:])
    private let servers = Mutex<(tcp: TCPServer?, udp: UDPServer?)>((nil, nil))

    /// `addressClock`: monotonic nanoseconds the addresses' buckets refill by (a test's stands still).
    init(pool: ConnectionPool, bridges: BridgeAuthentication, limits: Limits = Limits(), log: Log,
         now: @escaping @Sendable () -> Date = { Date() }, addressClock: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }) {
        (self.pool, self.bridges, self.limits, self.log, self.now) = (pool, bridges, limits, log, now)
        addresses = TokenBuckets(perMinute: limits.refusalsPerAddressPerMinute, burst: limits.addressBurst, capacity: 10_000,
                                 now: { Double(addressClock()) / 1e9 })
    }

    /// Listens on `address` for TCP and UDP on `http`'s first loop; the port bound (with port
    /// 0, TCP's, which UDP then binds too).
    @discardableResult
    func start(_ address: ListenAddress, on http: HTTPServer) throws -> UInt16? {
        let tcp = TCPServer(address: address, on: http, maxConnections: limits.maxConnections, maxQueuedBytes: 64 * 1024) { [self] channel in
            DC09Session(channel: channel, receiver: self)
        }
        let port = try tcp.start()
        var udpAddress = address
        if case .inet(let host, 0) = address, let port { udpAddress = .inet(host: host, port: port) }
        if case .inet6(let host, 0) = address, let port { udpAddress = .inet6(host: host, port: port) }
        let udp = UDPServer(address: udpAddress, on: http, maxDatagramBytes: DC09.maxFrameBytes) { [self] datagram, truncated, peer in
            received(datagram, truncated: truncated, from: peer)
        }
        do {
            try udp.start()
        } catch {
            tcp.stop()
            throw error
        }
        servers.withLock { $0 = (tcp, udp) }
        log.info("dc09 listening", ["address": "\(address)", "port": port.map(String.init) ?? "-", "transports": "tcp,udp"])
        return port
    }

    func stop() {
        let (tcp, udp) = servers.withLock { $0 }
        tcp?.stop()
        udp?.stop()
    }

    /// A UDP datagram: one frame, answered to its sender.
    private func received(_ datagram: [UInt8], truncated: Bool, from peer: UDPPeer) {
        guard let udp = servers.withLock({ $0.udp }) else { return }
        Task {
            let frame = truncated ? [] : datagram
            if let reply = await answer(frame, from: peer.address, transport: .udp) { udp.send(reply, to: peer) }
        }
    }

    // MARK: - One frame

    /// What to answer `frame` (LF to CR) from `address`: ACK once its events are committed, NAK,
    /// DUH, or nil for no answer (the panel sends it again).
    func answer(_ frame: [UInt8], from address: String, transport: Transport) async -> [UInt8]? {
        guard addresses.allows(address) else { return count(.unanswered, transport, reply: nil) }
        let reply = await answerAllowed(frame, from: address)
        if reply.refused { addresses.charge(address) }
        return count(reply.outcome, transport, reply: reply.bytes)
    }

    private struct Reply {
        let outcome: Outcome
        let bytes: [UInt8]?
        var refused: Bool { outcome == .nak || outcome == .duh || outcome == .unknownAccount }
    }

    private func answerAllowed(_ frame: [UInt8], from address: String) async -> Reply {
        let now = self.now()
        let window = (behind: limits.behindSeconds, ahead: limits.aheadSeconds)
        // First without a key: a plain frame is read whole, an encrypted one as far as its identity.
        let header: DC09.Header
        var plain: DC09.Frame?
        do throws(DC09.Refusal) {
            let read = try DC09.read(frame, now: now, window: window) { _ in nil }
            (header, plain) = (read.header, read)
        } catch {
            switch error {
            case .undecryptable(let named): header = named
            case .corrupt, .stale, .unsupported: return Reply(outcome: .nak, bytes: DC09Reply.nak(now: now))
            }
        }
        let identity = (receiver: (header.receiver ?? "").uppercased(), line: header.line.uppercased(), account: header.account.uppercased())
        let found: (tenant: UUID, bridge: Bridge, key: [UInt8]?)?
        do {
            found = try await pool.withConnection { connection -> (UUID, Bridge, [UInt8]?)? in
                guard let (tenant, id) = try DC09Store().owner(receiver: identity.receiver, line: identity.line, account: identity.account,
                                                               on: connection) else { return nil }
                return try connection.withTenantTransaction(tenant) { connection -> (UUID, Bridge, [UInt8]?)? in
                    guard case .some(let key) = try DC09Store().key(bridge: id, on: connection),
                          let bridge = try BridgeStore().find(id, on: connection) else { return nil }
                    return (tenant, bridge, key)
                }
            }
        } catch {
            log.warning("dc09: could not look up an account; no answer, the panel sends again", ["error": "\(error)"])
            return Reply(outcome: .unanswered, bytes: nil)
        }
        guard let (tenant, bridge, key) = found else {
            log.info("dc09: a frame for an unknown account (DUH)", ["peer": address, "receiver": identity.receiver, "line": identity.line,
                                                                   "account": identity.account])
            return Reply(outcome: .unknownAccount, bytes: DC09Reply.duh(header))
        }
        // An account with a key takes encrypted frames only: anyone may write a plain one.
        guard header.encrypted == (key != nil) else {
            log.info("dc09: refused a frame (DUH)", ["bridge_id": bridge.id.lowercasedText, "peer": address,
                                                      "reason": key == nil ? "encrypted, and the account has no key" : "plain, and the account has a key"])
            return Reply(outcome: .duh, bytes: DC09Reply.duh(header))
        }
        let read: DC09.Frame
        if let plain {
            read = plain
        } else {
            do throws(DC09.Refusal) {
                read = try DC09.read(frame, now: now, window: window) { _ in key }
            } catch {
                switch error {
                case .undecryptable:
                    log.info("dc09: a frame the account's key does not open (DUH)", ["bridge_id": bridge.id.lowercasedText, "peer": address])
                    return Reply(outcome: .duh, bytes: DC09Reply.duh(header))
                case .stale(let sent):
                    log.info("dc09: a frame outside the time window (NAK with the receiver's time)",
                             ["bridge_id": bridge.id.lowercasedText, "sent": DC09.timestamp(sent)])
                    return Reply(outcome: .nak, bytes: DC09Reply.nak(now: now))
                case .corrupt, .unsupported:
                    return Reply(outcome: .nak, bytes: DC09Reply.nak(now: now))
                }
            }
        }
        let ack = { DC09Reply.ack(read.header, key: key, now: now) }
        switch await take(read, bridge: bridge, tenant: tenant, from: address) {
        case .taken: return Reply(outcome: .ack, bytes: ack())
        case .resent: return Reply(outcome: .duplicate, bytes: ack())
        case .refused(let why):
            log.info("dc09: refused a message (DUH)", ["bridge_id": bridge.id.lowercasedText, "reason": why])
            return Reply(outcome: .duh, bytes: DC09Reply.duh(read.header))
        case .later: return Reply(outcome: .unanswered, bytes: nil)
        }
    }

    private enum Taking { case taken, resent, refused(String), later }

    /// Applies a frame's events to the bridge's group in one transaction, with its sequence
    /// number: taken, a resend, refused (nothing written), or to be tried later.
    private func take(_ frame: DC09.Frame, bridge: Bridge, tenant: UUID, from address: String) async -> Taking {
        if frame.extensions.contains(where: { $0.kind == "K" }) { return .refused("a key change ([K]): keys are changed in Roost, not by the panel") }
        let events: [DC09Event]
        do throws(DC09.Refusal) {
            events = try DC09Event.events(in: frame)
        } catch {
            if case .unsupported(let why) = error { return .refused(why) }
            return .refused("an unreadable data block")
        }
        let account = frame.header.account.uppercased()
        let effects = events.map { DC09Effects.effect(of: $0, account: account, holdUpIsDuress: bridge.dc09?.holdUpIsDuress ?? false) }
        let known = effects.filter { $0 != .unknown }
        if !events.isEmpty && known.isEmpty { return .refused("no event code Roost knows (\(events.map(\.code).joined(separator: ",")))") }
        let extras = DC09Extras(frame.extensions)
        let window = limits.duplicateWindowSeconds
        let bridges = self.bridges
        do {
            let result: Taking = try await retryingConflicts { [known] in
                try await self.pool.withConnection { connection in
                    try connection.withTenantTransaction(tenant) { connection -> (Taking, Bool) in
                        // A link test spends no token: it writes only the heartbeat.
                        if !known.isEmpty, try BridgeStore().consumeToken(bridge.id, on: connection) != nil { return (.later, false) }
                        try bridges.heard(bridge, tenant: tenant, on: connection)
                        if known.isEmpty || known.allSatisfy({ $0 == .heartbeat }) { return (.taken, false) }
                        guard try DC09Store().take(tenant: tenant, bridge: bridge.id, sequence: frame.header.sequence, window: window, on: connection) else {
                            return (.resent, false)
                        }
                        var created = false
                        for effect in known {
                            created = try Self.apply(effect, frame: frame, extras: extras, bridge: bridge, tenant: tenant, on: connection) || created
                        }
                        return (.taken, created)
                    }
                }
            }
            return result
        } catch {
            log.warning("dc09: a message not applied yet; no answer, the panel sends again", ["bridge_id": bridge.id.lowercasedText, "error": "\(error)"])
            return .later
        }
    }

    /// Runs `body` again when a concurrent trigger under the same dedup key won the race (a
    /// unique violation rolled the transaction back); rings the delivery bell when an alert was made.
    private func retryingConflicts(_ body: @escaping @Sendable () async throws -> (Taking, Bool)) async throws -> Taking {
        for _ in 0..<4 {
            do {
                let (result, created) = try await body()
                if created { DeliveryBell.shared.ring() }
                return result
            } catch let error as DatabaseError where error.code == .uniqueViolation {
                continue
            }
        }
        let (result, created) = try await body()
        if created { DeliveryBell.shared.ring() }
        return result
    }

    /// One event's effect in the transaction; true when it raised a new alert.
    private static func apply(_ effect: DC09Effects.Effect, frame: DC09.Frame, extras: DC09Extras, bridge: Bridge, tenant: UUID,
                              on connection: PostgresConnection) throws -> Bool {
        switch effect {
        case .trigger(let key, let summary, let severity):
            let alert = try BridgeAlert(action: "trigger", dedupKey: key, summary: summary, severity: severity.name, occurredAt: nil,
                                        location: extras.location) { () throws(APIError) in extras.details(frame) }
            if case .created = try alert.run(by: bridge, tenant: tenant, on: connection) { return true }
            return false
        case .resolve(let key, let summary):
            let alert = try BridgeAlert(action: "resolve", dedupKey: key, summary: summary, severity: nil, occurredAt: nil, location: nil) { nil }
            _ = try alert.run(by: bridge, tenant: tenant, on: connection)
            return false
        case .information(let summary):
            let message = NewMessage(clientMessageID: nil, text: BridgeAlert.text(summary, at: bridge.place?.address), kind: .chat, severity: nil,
                                     template: nil, location: nil, replyTo: nil)
            _ = try MessageStore().post(tenant: tenant, group: bridge.groupID, authorType: .bridge, authorID: bridge.id, authorName: bridge.name,
                                        message: message, bridge: bridge.id, on: connection)
            return false
        case .duress(let key, let summary):
            // Silent: the owner and admins only, red whatever the bridge's arming.
            var alert = try BridgeAlert(action: "trigger", dedupKey: key, summary: summary, severity: AlertSeverity.red.name, occurredAt: nil,
                                        location: extras.location) { () throws(APIError) in extras.details(frame) }
            alert.managersOnly = true
            if case .created = try alert.run(by: bridge, tenant: tenant, on: connection) { return true }
            return false
        case .heartbeat, .unknown:
            return false
        }
    }

    // MARK: - Metrics

    @discardableResult
    private func count(_ outcome: Outcome, _ transport: Transport, reply: [UInt8]?) -> [UInt8]? {
        counts.withLock { $0[transport.rawValue + ":" + outcome.rawValue, default: 0] += 1 }
        return reply
    }

    func renderMetrics() -> String {
        let snapshot = counts.withLock { $0 }
        let open = servers.withLock { $0.tcp }?.connections ?? (open: 0, refused: 0)
        var out = "# HELP roost_dc09_connections Open TCP connections of alarm panels.\n# TYPE roost_dc09_connections gauge\n"
        out += "roost_dc09_connections \(open.open)\n"
        out += "# HELP roost_dc09_messages_total DC-09 frames by transport and outcome (unanswered: past a rate, or the database away).\n"
        out += "# TYPE roost_dc09_messages_total counter\n"
        for transport in Transport.allCases {
            for outcome in Outcome.allCases {
                out += "roost_dc09_messages_total{transport=\"\(transport.rawValue)\",outcome=\"\(outcome.rawValue)\"} "
                    + "\(snapshot[transport.rawValue + ":" + outcome.rawValue, default: 0])\n"
            }
        }
        return out
    }
}

/// What a frame's extension blocks add to its alert: the place (`[X…]` longitude, `[Y…]`
/// latitude, degrees with an optional hemisphere letter) and verification links (`[V…]`, kept
/// as links in the alert's details, never fetched by Roost).
struct DC09Extras {
    var location: Location?
    var links: [String] = []

    init(_ extensions: [DC09.Extension]) {
        func degrees(_ text: String) -> Double? {
            var text = Substring(text.trimmingCharacters(in: .whitespaces))
            var sign = 1.0
            if let first = text.first, "NSEW".contains(first) {
                sign = "SW".contains(first) ? -1 : 1
                text = text.dropFirst()
            }
            return Double(text).map { $0 * sign }
        }
        let lon = extensions.first { $0.kind == "X" }.flatMap { degrees($0.value) }
        let lat = extensions.first { $0.kind == "Y" }.flatMap { degrees($0.value) }
        if let lat, let lon, (-90...90).contains(lat), (-180...180).contains(lon) { location = Location(lat: lat, lon: lon, accuracyM: nil) }
        links = extensions.filter { $0.kind == "V" }.map(\.value).filter { link in
            let lower = link.lowercased()
            return (lower.hasPrefix("https://") || lower.hasPrefix("http://")) && link.utf8.count <= 1024
        }.prefix(4).map { $0 }
    }

    /// `{"dc09": {"account", "sequence", "data", "links"?}}` as JSON text.
    func details(_ frame: DC09.Frame) -> String? {
        var dc09: [String: Any] = ["account": frame.header.account, "sequence": frame.header.sequence, "data": String(frame.data.prefix(512))]
        if !links.isEmpty { dc09["links"] = links.map { ["href": $0, "text": "Verification"] } }
        guard let data = try? JSONSerialization.data(withJSONObject: ["dc09": dc09], options: [.sortedKeys]) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
