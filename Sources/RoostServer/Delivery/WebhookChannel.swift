import RoostProtocol

/// Deliveries POSTed to the operator's webhook (`ROOST_DELIVERY_WEBHOOK_URL`), signed when it
/// has a secret; any 2xx delivers, anything else is tried again.
struct WebhookChannel: DeliveryChannel {
    let webhook: (url: OutboundURL, secret: String?)?
    let network: OutboundNetwork
    let tls: TLSClientContext?
    let timeoutSeconds: Int

    func send(_ delivery: Delivery) throws -> DeliveryOutcome {
        guard let webhook else { return .retry("no delivery webhook is configured for \(delivery.message.channel)") }
        let status = try WebhookClient(url: webhook.url, network: network, secret: webhook.secret, timeoutSeconds: timeoutSeconds, tls: tls)
            .post(delivery.payload)
        return (200..<300).contains(status) ? .delivered : .retry("webhook answered \(status)")
    }
}
