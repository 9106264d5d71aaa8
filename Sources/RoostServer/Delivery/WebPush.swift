import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
import Synchronization

/// Sends one push to one Web Push subscription: the rendered notification as JSON, encrypted
/// (RFC 8291), with VAPID (RFC 8292), `TTL`, `Urgency` and `Topic` (RFC 8030 §5).
struct WebPushSender {
    let key: P256Key
    let subject: String
    let settings: PushSettings
    let tls: TLSClientContext?
    let timeoutSeconds: Int

    struct Notification {
        let payload: [UInt8]
        let ttl: Int
        let urgent: Bool
        let topic: String?
    }

    func send(_ notification: Notification, to subscription: WebPushSubscription, now: Date = Date()) throws -> DeliveryOutcome {
        // Checked again at sending: the allow-list may have shrunk since the device registered,
        // and the connection checks every address the name resolves to now.
        let url: OutboundURL
        do {
            url = try settings.endpoint(subscription.endpoint)
        } catch {
            return .gone("the endpoint is refused: \(error)")
        }
        let audience = url.origin
        let body = try WebPushEncryption.encrypt(notification.payload, p256dh: subscription.p256dh, auth: subscription.auth)
        var headers = [
            ("Authorization", try VAPID.authorization(audience: audience, subject: subject, expires: now.addingTimeInterval(12 * 3600), key: key)),
            ("Content-Encoding", "aes128gcm"), ("Content-Type", "application/octet-stream"),
            ("TTL", String(notification.ttl)), ("Urgency", notification.urgent ? "high" : "normal"),
        ]
        if let topic = notification.topic { headers.append(("Topic", topic)) }
        // An address the policy refuses throws a refusal, which fails the row for good.
        let response = try OutboundPost(url: url, network: settings.network, headers: headers, timeoutSeconds: timeoutSeconds, tls: tls).send(body)
        switch response.status {
        case 200..<300: return .delivered
        case 404, 410: return .gone("the push service answered \(response.status): the subscription is gone")
        case 429, 500...599:
            return .retry("the push service answered \(response.status)" + (response.headers["retry-after"].map { " (Retry-After: \($0))" } ?? ""))
        default: return .failed("the push service refused the push with \(response.status)")
        }
    }

    /// The notification for a push row: title and body from `templates/<locale>/<template>.push`,
    /// what the app needs to open the right place, and how urgent and long-lived it is.
    static func notification(template: TemplateName, data: [String: Any], locale: String, messages: RenderedMessages) throws -> Notification {
        let rendered = try messages.push(template, locale: locale, data: data)
        let alert = data["alert"] as? [String: Any]
        let groupID = data["group_id"] as? String ?? alert?["group_id"] as? String
        let seq = data["seq"] as? Int ?? alert?["seq"] as? Int
        let urgent = RenderedMessages.severity(of: data) == "red" || data["critical"] as? Bool == true
        var fields: [String: Any] = ["template": template.name, "title": rendered.title, "body": rendered.body]
        if let groupID { fields["group_id"] = groupID }
        if let seq { fields["seq"] = seq }
        if let checkin = (data["checkin"] as? [String: Any])?["checkin_id"] as? String { fields["checkin_id"] = checkin }
        if let request = (data["checkin_request"] as? [String: Any])?["id"] as? String { fields["checkin_request_id"] = request }
        var payload = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        if payload.count > WebPushEncryption.maxPlaintext {
            fields["body"] = String(rendered.body.prefix(1000))
            payload = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        }
        // How long a push may wait for the device, and what it collapses with on the way: one
        // alert's pushes (raised, re-pushed, all clear) replace each other; so do one check-in's
        // prompts, and a group's chat lines.
        let (ttl, collapse): (Int, String?) = switch template {
        case .alert, .alertClosed: (6 * 3600, groupID.flatMap { group in seq.map { "alert/\(group)/\($0)" } })
        case .checkinPrompt: (900, fields["checkin_id"].map { "checkin/\($0)" })
        case .chat: (24 * 3600, groupID.map { "chat/\($0)" })
        default: (24 * 3600, nil)
        }
        return Notification(payload: Array(payload), ttl: ttl, urgent: urgent,
                            topic: collapse.map { String(Secrets.base64URL(Digest.sha256(Array($0.utf8))).prefix(32)) })
    }
}
