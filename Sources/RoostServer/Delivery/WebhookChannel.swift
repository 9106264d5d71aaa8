import RoostProtocol

/// Deliveries POSTed to the operator's webhook (`ROOST_DELIVERY_WEBHOOK_URL`), signed when it
/// has a secret, over the webhook origin's kept connections; any 2xx delivers, a 429 slows the
/// origin down, anything else is tried again.
struct WebhookChannel: OriginChannel {
    let webhook: (url: OutboundURL, secret: String?)?

    func destination(of delivery: Delivery) -> Result<OutboundURL, DeliveryOutcomeError> {
        guard let webhook else { return .failure(DeliveryOutcomeError(.retry("no delivery webhook is configured for \(delivery.message.channel)"))) }
        return .success(webhook.url)
    }

    func send(_ delivery: Delivery, to url: OutboundURL, over link: OriginLink, then: @escaping @Sendable (DeliveryOutcome) -> Void) throws {
        WebhookClient(url: url, secret: webhook?.secret).post(delivery.payload, over: link) { answer in
            switch answer {
            case .success(let response): then(DeliveryOutcome.of(response, from: "the webhook") ?? .retry("the webhook answered \(response.status)"))
            case .failure(let failure): then(OutboxWorker.outcome(of: failure))
            }
        }
    }
}
