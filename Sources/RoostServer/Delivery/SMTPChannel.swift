import Foundation
import RoostProtocol

/// Emails rendered from the tenant's locale's templates and sent over SMTP (`ROOST_EMAIL=smtp`),
/// through the relay's queue: a few kept sessions, each carrying many emails. Personal emails
/// stay personal: one message per recipient, never a list.
struct SMTPChannel: OriginChannel {
    let settings: SMTPSettings?
    let messages: RenderedMessages

    func destination(of delivery: Delivery) -> Result<OutboundURL, DeliveryOutcomeError> {
        guard let settings else { return .failure(DeliveryOutcomeError(.retry("ROOST_EMAIL=smtp without ROOST_SMTP_URL"))) }
        guard MailAddress.isPlainAddress(delivery.message.recipient) else {
            return .failure(DeliveryOutcomeError(.failed("not an address SMTP can send to")))
        }
        return .success(settings.endpoint)
    }

    func send(_ delivery: Delivery, to url: OutboundURL, over link: OriginLink, then: @escaping @Sendable (DeliveryOutcome) -> Void) throws {
        then(try send(delivery, over: link))
    }

    private func send(_ delivery: Delivery, over link: OriginLink) throws -> DeliveryOutcome {
        guard let settings else { return .retry("ROOST_EMAIL=smtp without ROOST_SMTP_URL") }
        let message = delivery.message
        var fields = delivery.data
        fields["tenant_name"] = delivery.tenant?.name ?? ""
        fields["tenant"] = delivery.tenant?.slug
        let rendered = try messages.email(message.template, locale: delivery.tenant?.locale ?? "en", data: fields)
        let mail = MailMessage(from: settings.from, to: message.recipient, subject: rendered.subject, text: rendered.text, html: rendered.html,
                               date: Date(), messageID: message.id.lowercasedText, boundary: "=_roost_" + Digest.hex(Secrets.randomBytes(12)))
        return try link.mail(mail, settings: settings)
    }
}
