import Foundation
import RoostPersistence
import RoostProtocol

/// One way out of the outbox (API.md "Outbound delivery"): given a claimed row and what it
/// needs, one attempt, whose outcome the `DeliveryPolicy` turns into the row's next step. A new
/// channel is a type of its own in a file of its own, and a case of `OutboxWorker.Channels.Route`
/// that names it in configuration. Channels block on I/O (each within its timeout): the worker
/// runs them on threads of its own.
protocol DeliveryChannel: Sendable {
    func send(_ delivery: Delivery) throws -> DeliveryOutcome
}

/// A claimed row and what its channels read besides it.
struct Delivery {
    let message: OutboxMessage
    /// The row's `data`, parsed (templates render from it).
    let data: [String: Any]
    let tenant: Tenant?
    /// A Web Push device's subscription, and the key to sign with.
    var subscription: WebPushSubscription?
    var vapid: P256Key?

    /// `{"id", "channel", "to", "template", "tenant", "data"}` (API.md "Outbound delivery"): what
    /// the log and the webhook carry.
    var payload: [UInt8] {
        let text = "{\"id\":\"\(message.id.lowercasedText)\",\"channel\":\(JSONString.quote(message.channel.name)),"
            + "\"to\":\(JSONString.quote(message.recipient)),\"template\":\(JSONString.quote(message.template.name)),"
            + "\"tenant\":\(JSONString.quote(tenant?.slug ?? "")),\"data\":\(message.data)}"
        return Array(text.utf8)
    }
}

/// What one delivery attempt came to, whatever carried it.
enum DeliveryOutcome: Equatable {
    case delivered
    /// Worth trying again later.
    case retry(String)
    /// No retry would change it.
    case failed(String)
    /// The Web Push subscription is gone: its device is removed and the row failed.
    case gone(String)

    var error: String? {
        switch self {
        case .delivered: nil
        case .retry(let text), .failed(let text), .gone(let text): text
        }
    }
}
