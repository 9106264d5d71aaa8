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

/// A channel that delivers to a server over kept connections (a push service, the webhook, an
/// SMTP relay): the worker hands each delivery to the queue of the origin it names
/// (`OriginQueue`), whose threads each keep a connection or session (`OriginLink`).
protocol OriginChannel: Sendable {
    /// Where the delivery goes, or the outcome of not sending it (no such device, not allowed).
    func destination(of delivery: Delivery) -> Result<OutboundURL, DeliveryOutcomeError>
    /// Sends, handing the outcome to `then` exactly once (at once, or later when the request
    /// went over HTTP/2); throws only before anything was handed over.
    func send(_ delivery: Delivery, to url: OutboundURL, over link: OriginLink, then: @escaping @Sendable (DeliveryOutcome) -> Void) throws
}

/// An outcome decided before anything was sent.
struct DeliveryOutcomeError: Error {
    let outcome: DeliveryOutcome
    init(_ outcome: DeliveryOutcome) { self.outcome = outcome }
}

/// A claimed row and what its channels read besides it. Immutable once made (`data` holds only
/// what JSONSerialization makes: strings, numbers, arrays, dictionaries), so it is handed
/// between threads as it is.
struct Delivery: @unchecked Sendable {
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
    /// Not sent: the origin asked to slow down (`429`); sent at `until`, no attempt counted.
    case deferred(until: Date, String)

    var error: String? {
        switch self {
        case .delivered: nil
        case .retry(let text), .failed(let text), .gone(let text), .deferred(_, let text): text
        }
    }

    /// What an HTTP answer means for any channel: a 2xx delivered, a 429 slows the origin down
    /// for its `Retry-After` (seconds, 1 to 600; 30 without one), a 5xx is tried again; nil for
    /// the rest, which each channel reads its own way.
    static func of(_ response: HTTPResponseFraming.Response, from service: String, now: Date = Date()) -> DeliveryOutcome? {
        switch response.status {
        case 200..<300: return .delivered
        case 429:
            let seconds = response.headers["retry-after"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }.map { min(600, max(1, $0)) } ?? 30
            return .deferred(until: now.addingTimeInterval(Double(seconds)), "\(service) answered 429 (Retry-After: \(seconds))")
        case 500...599: return .retry("\(service) answered \(response.status)")
        default: return nil
        }
    }
}
