import Foundation
import RoostPersistence
import RoostProtocol
import Synchronization

/// What the delivery engine tells `/metrics` (docs/OPERATIONS.md, "Metrics worth alerting on"):
/// deliveries by channel, lane and outcome; how long after its change committed each delivery
/// was accepted, by channel; connections per origin; and, read from the database at each
/// scrape, how long the oldest due delivery of each lane has waited.
public final class DeliveryMetrics: Sendable {
    /// Upper bounds of the commit-to-accepted histogram, seconds.
    static let buckets: [Double] = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600]

    private struct Histogram {
        var counts = [Int](repeating: 0, count: DeliveryMetrics.buckets.count)
        var sum = 0.0
        var count = 0
    }

    private let outcomes = Mutex<[String: Int]>([:])
    private let latencies = Mutex<[String: Histogram]>([:])
    private let origins = Mutex<[OriginQueues]>([])

    public init() {}

    func record(_ message: OutboxMessage, outcome: DeliveryOutcome, now: Date = Date()) {
        let name = switch outcome {
        case .delivered: "delivered"
        case .retry: "retry"
        case .failed: "failed"
        case .gone: "gone"
        case .deferred: "deferred"
        }
        let key = "channel=\"\(message.channel.name)\",lane=\"\(message.lane)\",outcome=\"\(name)\""
        outcomes.withLock { $0[key, default: 0] += 1 }
        guard outcome == .delivered, let committed = message.createdAt else { return }
        let seconds = max(0, now.timeIntervalSince(committed))
        latencies.withLock { histograms in
            var histogram = histograms[message.channel.name] ?? Histogram()
            for (index, bound) in Self.buckets.enumerated() where seconds <= bound { histogram.counts[index] += 1 }
            histogram.sum += seconds
            histogram.count += 1
            histograms[message.channel.name] = histogram
        }
    }

    func watch(_ queues: OriginQueues) { origins.withLock { $0.append(queues) } }

    /// The figures in Prometheus text format; `waiting` is `OutboxStore.oldestWaiting`'s answer.
    public func render(waiting: [DeliveryLane: Double]) -> String {
        var out = "# HELP roost_deliveries_total Delivery attempts by channel, lane and outcome (deferred: held back by a 429 or quiet hours).\n"
            + "# TYPE roost_deliveries_total counter\n"
        for (key, count) in outcomes.withLock({ $0 }).sorted(by: { $0.key < $1.key }) { out += "roost_deliveries_total{\(key)} \(count)\n" }
        out += "# HELP roost_delivery_accepted_seconds From the change that queued a delivery to its acceptance by the service, by channel.\n"
            + "# TYPE roost_delivery_accepted_seconds histogram\n"
        for (channel, histogram) in latencies.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            for (index, bound) in Self.buckets.enumerated() {
                out += "roost_delivery_accepted_seconds_bucket{channel=\"\(channel)\",le=\"\(bound)\"} \(histogram.counts[index])\n"
            }
            out += "roost_delivery_accepted_seconds_bucket{channel=\"\(channel)\",le=\"+Inf\"} \(histogram.count)\n"
            out += "roost_delivery_accepted_seconds_sum{channel=\"\(channel)\"} \(histogram.sum)\n"
            out += "roost_delivery_accepted_seconds_count{channel=\"\(channel)\"} \(histogram.count)\n"
        }
        out += "# HELP roost_delivery_oldest_waiting_seconds How long the oldest due delivery of each lane has waited (0: none waits).\n"
            + "# TYPE roost_delivery_oldest_waiting_seconds gauge\n"
        for lane in DeliveryLane.allCases { out += "roost_delivery_oldest_waiting_seconds{lane=\"\(lane)\"} \(waiting[lane] ?? 0)\n" }
        let counters = origins.withLock { $0.flatMap(\.counters) }.sorted { $0.origin < $1.origin }
        out += "# HELP roost_delivery_connections Connections (or SMTP sessions) kept open to each origin now.\n"
            + "# TYPE roost_delivery_connections gauge\n"
        for origin in counters { out += "roost_delivery_connections{origin=\"\(Self.label(origin.origin))\"} \(origin.openNow.load(ordering: .relaxed))\n" }
        out += "# HELP roost_delivery_connections_opened_total Connections opened to each origin, and how many resumed a TLS session.\n"
            + "# TYPE roost_delivery_connections_opened_total counter\n"
        for origin in counters {
            let label = Self.label(origin.origin)
            out += "roost_delivery_connections_opened_total{origin=\"\(label)\",resumed=\"false\"} "
                + "\(origin.openedTotal.load(ordering: .relaxed) - origin.resumedTotal.load(ordering: .relaxed))\n"
            out += "roost_delivery_connections_opened_total{origin=\"\(label)\",resumed=\"true\"} \(origin.resumedTotal.load(ordering: .relaxed))\n"
        }
        return out
    }

    /// An origin as a label value: quotes and backslashes escaped.
    private static func label(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
