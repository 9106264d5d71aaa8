import Foundation

/// Deliveries written as one JSON line each to stdout (`ROOST_DELIVERY=log`, the default): what
/// a development server and the tests read.
struct LogChannel: DeliveryChannel {
    /// Writes one whole line (the worker keeps lines from interleaving).
    let write: @Sendable ([UInt8]) -> Void

    func send(_ delivery: Delivery) throws -> DeliveryOutcome {
        write(delivery.payload + [10])
        return .delivered
    }
}
