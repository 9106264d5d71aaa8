import Foundation
import RoostProtocol

/// Emails rendered from the tenant's locale's templates and sent over SMTP (`ROOST_EMAIL=smtp`).
struct SMTPChannel: DeliveryChannel {
    let settings: SMTPSettings?
    let messages: RenderedMessages
    let network: OutboundNetwork
    let tls: TLSClientContext?
    let timeoutSeconds: Int

    func send(_ delivery: Delivery) throws -> DeliveryOutcome {
        guard let settings else { return .retry("ROOST_EMAIL=smtp without ROOST_SMTP_URL") }
        let message = delivery.message
        guard MailAddress.isPlainAddress(message.recipient) else { return .failed("not an address SMTP can send to") }
        var fields = delivery.data
        fields["tenant_name"] = delivery.tenant?.name ?? ""
        fields["tenant"] = delivery.tenant?.slug
        let rendered = try messages.email(message.template, locale: delivery.tenant?.locale ?? "en", data: fields)
        let mail = MailMessage(from: settings.from, to: message.recipient, subject: rendered.subject, text: rendered.text, html: rendered.html,
                               date: Date(), messageID: message.id.lowercasedText, boundary: "=_roost_" + Digest.hex(Secrets.randomBytes(12)))
        return try SMTPClient(settings: settings, network: network, tls: tls, timeoutSeconds: timeoutSeconds).send(mail)
    }
}
