import RoostProtocol

/// Pushes to a Web Push device (a browser, or a UnifiedPush distributor's endpoint: the same
/// protocol), encrypted to its keys and signed with the server's VAPID key (`ROOST_PUSH=webpush`),
/// over its push service's kept connections; a subscription the push service says is gone
/// removes the device. A redirect is an answer like any other: never followed.
struct WebPushChannel: OriginChannel {
    let settings: PushSettings?
    let messages: RenderedMessages
    let tokens: VAPIDTokens
    let rendered: RenderedNotifications

    func destination(of delivery: Delivery) -> Result<OutboundURL, DeliveryOutcomeError> {
        guard let subscription = delivery.subscription else {
            return .failure(DeliveryOutcomeError(.failed("the Web Push device is no longer registered")))
        }
        guard let settings, delivery.vapid != nil, settings.subject != nil else {
            return .failure(DeliveryOutcomeError(.retry("Web Push is not configured (ROOST_VAPID_SUBJECT, and a VAPID key ROOST_SECRET_KEY opens)")))
        }
        // Checked again at sending: the allow-list may have shrunk since the device registered
        // (and the connection checks every address the name resolves to then). A UnifiedPush
        // distributor's server may be anywhere public.
        do {
            let unifiedPush = delivery.message.platform == "unifiedpush"
            return .success(unifiedPush ? try settings.unifiedPushEndpoint(subscription.endpoint) : try settings.endpoint(subscription.endpoint))
        } catch {
            return .failure(DeliveryOutcomeError(.gone("the endpoint is refused: \(error)")))
        }
    }

    func send(_ delivery: Delivery, to url: OutboundURL, over link: OriginLink, then: @escaping @Sendable (DeliveryOutcome) -> Void) throws {
        guard let subscription = delivery.subscription, let key = delivery.vapid, let subject = settings?.subject else {
            return then(.retry("Web Push is not configured (ROOST_VAPID_SUBJECT, and a VAPID key ROOST_SECRET_KEY opens)"))
        }
        let (template, locale) = (delivery.message.template, delivery.tenant?.locale ?? "en")
        let notification = try rendered.notification(template: template, locale: locale, data: delivery.message.data) {
            try WebPushSender.notification(template: template, data: delivery.data, locale: locale, messages: messages)
        }
        try WebPushSender(key: key, subject: subject, tokens: tokens).send(notification, to: subscription, at: url, over: link, then: then)
    }
}
