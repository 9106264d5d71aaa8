import RoostProtocol

/// Pushes to a Web Push device, encrypted to its keys and signed with the server's VAPID key
/// (`ROOST_PUSH=webpush`), over its push service's kept connections; a subscription the push
/// service says is gone removes the device.
struct WebPushChannel: HTTPDeliveryChannel {
    let settings: PushSettings?
    let messages: RenderedMessages
    let tokens: VAPIDTokens

    func destination(of delivery: Delivery) -> Result<OutboundURL, DeliveryOutcomeError> {
        guard let subscription = delivery.subscription else {
            return .failure(DeliveryOutcomeError(.failed("the Web Push device is no longer registered")))
        }
        guard let settings, delivery.vapid != nil, settings.subject != nil else {
            return .failure(DeliveryOutcomeError(.retry("Web Push is not configured (ROOST_VAPID_SUBJECT)")))
        }
        // Checked again at sending: the allow-list may have shrunk since the device registered
        // (and the connection checks every address the name resolves to then).
        do {
            return .success(try settings.endpoint(subscription.endpoint))
        } catch {
            return .failure(DeliveryOutcomeError(.gone("the endpoint is refused: \(error)")))
        }
    }

    func send(_ delivery: Delivery, to url: OutboundURL, over poster: any HTTPPoster) throws -> DeliveryOutcome {
        guard let subscription = delivery.subscription, let key = delivery.vapid, let subject = settings?.subject else {
            return .retry("Web Push is not configured (ROOST_VAPID_SUBJECT)")
        }
        let notification = try WebPushSender.notification(template: delivery.message.template, data: delivery.data,
                                                          locale: delivery.tenant?.locale ?? "en", messages: messages)
        return try WebPushSender(key: key, subject: subject, tokens: tokens).send(notification, to: subscription, at: url, over: poster)
    }
}
