import Synchronization

/// The server's counters for `/metrics` (Prometheus text format 0.0.4). Hot-path updates are
/// atomics; the per-route table and the histogram take a short lock once per request.
final class ServerMetrics: Sendable {
    struct RequestKey: Hashable {
        let method: String
        let route: String
        let status: Int
    }

    /// Handler latency buckets, seconds.
    static let bounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

    private struct Latency {
        var buckets = [Int](repeating: 0, count: ServerMetrics.bounds.count)
        var count = 0
        var sum = 0.0
    }

    /// What the latency histogram is labelled by: the route pattern, the method and the status's
    /// class ("2xx"), so an alert can be written per route without a series per status.
    struct LatencyKey: Hashable {
        let method: String
        let route: String
        let statusClass: Int
    }

    private let requests = Mutex<[RequestKey: Int]>([:])
    private let latency = Mutex<[LatencyKey: Latency]>([:])
    private let closes = Mutex<[UInt16: Int]>([:])
    let httpConnections = Atomic<Int>(0)
    let webSocketConnections = Atomic<Int>(0)
    let framesIn = Atomic<Int>(0)
    let framesOut = Atomic<Int>(0)
    let bytesIn = Atomic<Int>(0)
    let bytesOut = Atomic<Int>(0)
    /// Bytes waiting in every connection's outbound queue: memory held for slow readers.
    let queuedBytes = Atomic<Int>(0)
    /// Times accepting paused because descriptors or kernel memory ran out.
    let acceptPauses = Atomic<Int>(0)
    /// Uploads cut for arriving under the minimum rate.
    let uploadsTooSlow = Atomic<Int>(0)
    /// The longest event-loop iteration since the last scrape, nanoseconds.
    let worstLoopIteration = Atomic<UInt64>(0)

    func recordRequest(method: String, route: String, status: Int, seconds: Double) {
        requests.withLock { $0[RequestKey(method: method, route: route, status: status), default: 0] += 1 }
        let bucket = Self.bounds.firstIndex(where: { seconds <= $0 })
        latency.withLock { table in
            // One lookup, then changed in place (no copy of the buckets a request).
            let key = LatencyKey(method: method, route: route, statusClass: status / 100)
            let index = table.index(forKey: key) ?? {
                table[key] = Latency()
                return table.index(forKey: key)!
            }()
            if let bucket { table.values[index].buckets[bucket] += 1 }
            table.values[index].count += 1
            table.values[index].sum += seconds
        }
    }

    func recordClose(_ code: UInt16) {
        closes.withLock { $0[code, default: 0] += 1 }
    }

    func recordLoopIteration(nanoseconds: UInt64) {
        var current = worstLoopIteration.load(ordering: .relaxed)
        while nanoseconds > current {
            let (exchanged, original) = worstLoopIteration.compareExchange(expected: current, desired: nanoseconds, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    /// Everything in Prometheus text format.
    func render(pool: (open: Int, inUse: Int, waiting: Int), runningHandlers: Int, runningUploads: Int = 0) -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) { out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n" }
        func sample(_ name: String, _ labels: String = "", _ value: String) {
            out += labels.isEmpty ? "\(name) \(value)\n" : "\(name){\(labels)} \(value)\n"
        }
        family("roost_open_connections", "gauge", "Open client connections by kind.")
        sample("roost_open_connections", "kind=\"http\"", String(httpConnections.load(ordering: .relaxed)))
        sample("roost_open_connections", "kind=\"websocket\"", String(webSocketConnections.load(ordering: .relaxed)))

        family("roost_requests_total", "counter", "HTTP requests answered, by route pattern and status.")
        for (key, count) in requests.withLock({ $0 }).sorted(by: { ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status) }) {
            sample("roost_requests_total", "method=\"\(key.method)\",route=\"\(escape(key.route))\",status=\"\(key.status)\"", String(count))
        }

        family("roost_request_duration_seconds", "histogram",
               "Time from a request's arrival to its response being queued, by route pattern, method and status class.")
        let table = latency.withLock { $0 }.sorted { ($0.key.route, $0.key.method, $0.key.statusClass) < ($1.key.route, $1.key.method, $1.key.statusClass) }
        for (key, snapshot) in table {
            let labels = "method=\"\(key.method)\",route=\"\(escape(key.route))\",status_class=\"\(key.statusClass)xx\""
            var cumulative = 0
            for (index, bound) in Self.bounds.enumerated() {
                cumulative += snapshot.buckets[index]
                sample("roost_request_duration_seconds_bucket", labels + ",le=\"\(bound)\"", String(cumulative))
            }
            sample("roost_request_duration_seconds_bucket", labels + ",le=\"+Inf\"", String(snapshot.count))
            sample("roost_request_duration_seconds_sum", labels, String(snapshot.sum))
            sample("roost_request_duration_seconds_count", labels, String(snapshot.count))
        }

        family("roost_handlers_running", "gauge", "Request handlers running now.")
        sample("roost_handlers_running", "", String(runningHandlers))
        family("roost_uploads_running", "gauge", "Streamed uploads running now, in slots of their own.")
        sample("roost_uploads_running", "", String(runningUploads))
        family("roost_uploads_too_slow_total", "counter", "Uploads cut with 408 for arriving under the minimum rate.")
        sample("roost_uploads_too_slow_total", "", String(uploadsTooSlow.load(ordering: .relaxed)))

        family("roost_websocket_frames_total", "counter", "WebSocket messages and control frames, by direction.")
        sample("roost_websocket_frames_total", "direction=\"in\"", String(framesIn.load(ordering: .relaxed)))
        sample("roost_websocket_frames_total", "direction=\"out\"", String(framesOut.load(ordering: .relaxed)))
        family("roost_websocket_bytes_total", "counter", "WebSocket bytes on the wire, by direction.")
        sample("roost_websocket_bytes_total", "direction=\"in\"", String(bytesIn.load(ordering: .relaxed)))
        sample("roost_websocket_bytes_total", "direction=\"out\"", String(bytesOut.load(ordering: .relaxed)))
        family("roost_websocket_closes_total", "counter", "WebSocket close frames the server sent, by code.")
        for (code, count) in closes.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            sample("roost_websocket_closes_total", "code=\"\(code)\"", String(count))
        }

        family("roost_accept_pauses_total", "counter", "Times accepting paused for lack of descriptors or kernel memory (raise the open-file limit).")
        sample("roost_accept_pauses_total", "", String(acceptPauses.load(ordering: .relaxed)))
        family("roost_outbound_queued_bytes", "gauge", "Bytes queued for clients that have not read them yet.")
        sample("roost_outbound_queued_bytes", "", String(queuedBytes.load(ordering: .relaxed)))

        family("roost_db_pool_connections", "gauge", "PostgreSQL connections by state.")
        sample("roost_db_pool_connections", "state=\"open\"", String(pool.open))
        sample("roost_db_pool_connections", "state=\"in_use\"", String(pool.inUse))
        family("roost_db_pool_waiting", "gauge", "Callers waiting for a PostgreSQL connection.")
        sample("roost_db_pool_waiting", "", String(pool.waiting))

        family("roost_loop_iteration_max_seconds", "gauge", "Longest event-loop iteration since the last scrape (reactor lag).")
        let worst = worstLoopIteration.exchange(0, ordering: .relaxed)
        sample("roost_loop_iteration_max_seconds", "", String(Double(worst) / 1e9))
        return out
    }

    private func escape(_ label: String) -> String {
        label.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}

import Foundation
