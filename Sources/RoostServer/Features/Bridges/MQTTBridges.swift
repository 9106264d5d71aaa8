import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
import Synchronization

/// Roost's MQTT listener for bridges (`ROOST_MQTT_LISTEN`, off by default; API.md "Bridges,
/// extended"): MQTT 3.1.1 and 5, CONNECT with a bridge key as the password, PUBLISH at QoS 0
/// and 1 read by the bridge's profile (`BridgeTopics`), a PUBACK only once the alert is
/// committed. Roost is no broker: SUBSCRIBE is refused. The will message and a keep-alive
/// that runs out are the bridge's `bridge.offline` notice. TLS goes in front, as for HTTP.
final class MQTTBridges: Sendable {
    struct Limits: Sendable {
        var maxPacketSize = 64 * 1024
        /// QoS 1 publications a connection may have awaiting their PUBACK (5.0's Receive Maximum).
        var inflight = 16
        var connectionsPerKey = 4
        var maxConnections = 1000
        /// How long a new connection may take to send CONNECT.
        var connectTimeoutMilliseconds = 10_000
    }

    /// What a publication came to, counted on `/metrics` (`roost_mqtt_publications_total{outcome}`).
    enum Outcome: String, CaseIterable, Sendable {
        case applied, ignored, invalid
        case rateLimited = "rate_limited"
        case retried
    }

    /// Why a connection was refused or ended, counted (`roost_mqtt_connections_total{outcome}`).
    enum ConnectionOutcome: String, CaseIterable, Sendable {
        case accepted
        case badKey = "bad_key"
        case tooMany = "too_many_for_key"
        case protocolError = "protocol_error"
        case tooLarge = "packet_too_large"
        case keepAliveExpired = "keep_alive_expired"
        case connectTimeout = "connect_timeout"
    }

    /// The listener `roost serve` started, if any, for `/metrics`.
    static let running = Mutex<MQTTBridges?>(nil)

    let pool: ConnectionPool
    let bridges: BridgeAuthentication
    let intake: BridgeIntake
    let limits: Limits
    let log: Log
    private let perBridge = Mutex<[UUID: Int]>([:])
    private let counts = Mutex<[String: Int]>([:])
    private let server = Mutex<TCPServer?>(nil)

    init(pool: ConnectionPool, bridges: BridgeAuthentication, limits: Limits = Limits(), log: Log) {
        (self.pool, self.bridges, self.limits, self.log) = (pool, bridges, limits, log)
        intake = BridgeIntake(pool: pool)
    }

    /// Listens on `address` on `http`'s loops; the port bound.
    @discardableResult
    func start(_ address: ListenAddress, on http: HTTPServer) throws -> UInt16? {
        let server = TCPServer(address: address, on: http, maxConnections: limits.maxConnections) { [self] channel in
            MQTTSession(channel: channel, service: self)
        }
        let port = try server.start()
        self.server.withLock { $0 = server }
        log.info("mqtt listening", ["address": "\(address)", "port": port.map(String.init) ?? "-"])
        return port
    }

    func stop() {
        server.withLock { $0 }?.stop()
    }

    // MARK: - For sessions

    func count(_ outcome: Outcome) { counts.withLock { $0["p:" + outcome.rawValue, default: 0] += 1 } }
    func count(_ outcome: ConnectionOutcome) { counts.withLock { $0["c:" + outcome.rawValue, default: 0] += 1 } }

    /// Takes a connection slot of the bridge's key; false when it holds its limit already.
    func claimSlot(_ bridge: UUID) -> Bool {
        perBridge.withLock { slots in
            guard slots[bridge, default: 0] < limits.connectionsPerKey else { return false }
            slots[bridge, default: 0] += 1
            return true
        }
    }

    func releaseSlot(_ bridge: UUID) {
        perBridge.withLock { slots in
            slots[bridge, default: 1] -= 1
            if slots[bridge] == 0 { slots[bridge] = nil }
        }
    }

    /// Applies a publication of an admitted bridge: nil when it is done (applied, ignored or
    /// invalid: each answered), else the milliseconds after which to try it again (the rate
    /// limit, or the database away), so no alarm is lost while its PUBACK waits.
    /// `logRefusal`: whether an unreadable publication is logged (a connection logs its first
    /// only, so a device sending nonsense cannot flood the log; all are counted).
    func apply(_ publish: MQTT.Publish, by bridge: Bridge, tenant: UUID, logRefusal: Bool) async -> (outcome: Outcome, retryAfterMilliseconds: Int?) {
        switch BridgeTopics.read(topic: publish.topic, payload: publish.payload, profile: bridge.profile) {
        case .ignored:
            return (.ignored, nil)
        case .invalid(let why):
            if logRefusal {
                log.info("mqtt publication refused (the first of this connection)",
                         ["bridge_id": bridge.id.lowercasedText, "topic": String(publish.topic.prefix(200)), "reason": String(why.prefix(300))])
            }
            return (.invalid, nil)
        case .event(let alert):
            do {
                switch try await intake.applySpending(alert, by: bridge, tenant: tenant) {
                case .success: return (.applied, nil)
                case .failure(let limited): return (.rateLimited, limited.seconds * 1000)
                }
            } catch {
                log.warning("mqtt publication not applied yet; retrying", ["bridge_id": bridge.id.lowercasedText, "error": "\(error)"])
                return (.retried, 1000)
            }
        }
    }

    /// Heard from the bridge (a link test, a publication): brings it back if it was away.
    func heard(_ bridge: Bridge, tenant: UUID) async {
        do {
            try await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant) { try self.bridges.heard(bridge, tenant: tenant, on: $0) }
            }
        } catch {
            log.warning("mqtt: could not record a bridge's heartbeat", ["bridge_id": bridge.id.lowercasedText, "error": "\(error)"])
        }
    }

    /// The device went away without saying goodbye (its will) or stopped its keep-alive: the
    /// managers hear `bridge.offline`, once.
    func wentAway(_ bridge: Bridge, tenant: UUID, why: String) async {
        do {
            try await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant) { connection in
                    if try BridgeStore().wentAway(tenant: tenant, bridge: bridge.id, on: connection) {
                        try BridgeNotices.announce(bridge, tenant: tenant, event: .bridgeOffline, on: connection)
                    }
                }
            }
            log.info("mqtt bridge went away", ["bridge_id": bridge.id.lowercasedText, "why": why])
        } catch {
            log.warning("mqtt: could not announce a bridge offline", ["bridge_id": bridge.id.lowercasedText, "error": "\(error)"])
        }
    }

    /// The counters in Prometheus text format.
    func renderMetrics() -> String {
        let snapshot = counts.withLock { $0 }
        let open = server.withLock { $0 }?.connections ?? (open: 0, refused: 0)
        var out = "# HELP roost_mqtt_connections Open MQTT connections of bridges.\n# TYPE roost_mqtt_connections gauge\n"
        out += "roost_mqtt_connections \(open.open)\n"
        out += "# HELP roost_mqtt_connections_total MQTT connections by how they were refused or ended.\n"
        out += "# TYPE roost_mqtt_connections_total counter\n"
        for outcome in ConnectionOutcome.allCases {
            out += "roost_mqtt_connections_total{outcome=\"\(outcome.rawValue)\"} \(snapshot["c:" + outcome.rawValue, default: 0])\n"
        }
        out += "roost_mqtt_connections_total{outcome=\"over_server_limit\"} \(open.refused)\n"
        out += "# HELP roost_mqtt_publications_total MQTT publications of bridges by outcome.\n# TYPE roost_mqtt_publications_total counter\n"
        for outcome in Outcome.allCases {
            out += "roost_mqtt_publications_total{outcome=\"\(outcome.rawValue)\"} \(snapshot["p:" + outcome.rawValue, default: 0])\n"
        }
        return out
    }
}
