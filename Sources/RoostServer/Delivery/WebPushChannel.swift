/// Pushes to a Web Push device, encrypted to its keys and signed with the server's VAPID key
/// (`ROOST_PUSH=webpush`); a subscription the push service says is gone removes the device.
struct WebPushChannel: DeliveryChannel {
    let settings: PushSettings?
    let messages: RenderedMessages
    let tls: TLSClientContext?
    let timeoutSeconds: Int

    func send(_ delivery: Delivery) throws -> DeliveryOutcome {
        guard let subscription = delivery.subscription else { return .failed("the Web Push device is no longer registered") }
        guard let settings, let key = delivery.vapid, let subject = settings.subject else {
            return .retry("Web Push is not configured (ROOST_VAPID_SUBJECT)")
        }
        let notification = try WebPushSender.notification(template: delivery.message.template, data: delivery.data,
                                                          locale: delivery.tenant?.locale ?? "en", messages: messages)
        return try WebPushSender(key: key, subject: subject, settings: settings, tls: tls, timeoutSeconds: timeoutSeconds)
            .send(notification, to: subscription)
    }
}
