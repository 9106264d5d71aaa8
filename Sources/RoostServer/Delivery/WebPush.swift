import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
import Synchronization

/// Sends one push to one Web Push subscription: the rendered notification as JSON, encrypted
/// (RFC 8291), with VAPID (RFC 8292), `TTL`, `Urgency` and `Topic` (RFC 8030 §5), over the push
/// service's kept connections.
struct WebPushSender {
    let key: P256Key
    let subject: String
    let tokens: VAPIDTokens

    struct Notification: Sendable {
        let payload: [UInt8]
        let ttl: Int
        let urgent: Bool
        let topic: String?
    }

    /// Encrypts and sends; `then` hears the outcome. Throws only before sending (the encryption
    /// or the token failed).
    func send(_ notification: Notification, to subscription: WebPushSubscription, at url: OutboundURL, over poster: any HTTPPoster,
              now: Date = Date(), then: @escaping @Sendable (DeliveryOutcome) -> Void) throws {
        let body = try WebPushEncryption.encrypt(notification.payload, p256dh: subscription.p256dh, auth: subscription.auth)
        var headers = [
            ("Authorization", try tokens.authorization(audience: url.origin, subject: subject, key: key, now: now)),
            ("Content-Encoding", "aes128gcm"), ("Content-Type", "application/octet-stream"),
            ("TTL", String(notification.ttl)), ("Urgency", notification.urgent ? "high" : "normal"),
        ]
        if let topic = notification.topic { headers.append(("Topic", topic)) }
        poster.post(url, headers: headers, body: body) { answer in
            then(Self.outcome(of: answer, now: now))
        }
    }

    /// What the push service's answer means for the push. An address the policy refuses is a
    /// refusal, which fails the row for good.
    static func outcome(of answer: Result<HTTPResponseFraming.Response, OutboundFailure>, now: Date) -> DeliveryOutcome {
        let response: HTTPResponseFraming.Response
        switch answer {
        case .success(let answered): response = answered
        case .failure(let failure): return OutboxWorker.outcome(of: failure)
        }
        if let outcome = DeliveryOutcome.of(response, from: "the push service", now: now) { return outcome }
        switch response.status {
        case 404, 410: return .gone("the push service answered \(response.status): the subscription is gone")
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

/// VAPID tokens (RFC 8292), one per push service origin and key: signed once and sent with
/// every push to that origin until an hour before it expires (tokens live 12 hours; RFC 8292
/// allows 24), rather than one ECDSA signature a push.
final class VAPIDTokens: Sendable {
    private struct Token {
        let header: String
        let renewAt: Date
    }

    private let tokens = Mutex<[String: Token]>([:])
    static let lifetime: TimeInterval = 12 * 3600
    static let renewBefore: TimeInterval = 3600

    func authorization(audience: String, subject: String, key: P256Key, now: Date) throws -> String {
        let name = audience + " " + Secrets.base64URL(key.publicPoint) + " " + subject
        if let token = tokens.withLock({ $0[name] }), now < token.renewAt { return token.header }
        let header = try VAPID.authorization(audience: audience, subject: subject, expires: now.addingTimeInterval(Self.lifetime), key: key)
        tokens.withLock { $0[name] = Token(header: header, renewAt: now.addingTimeInterval(Self.lifetime - Self.renewBefore)) }
        return header
    }
}

/// Notifications already rendered, by template, locale and row data: a fanout's pushes carry
/// the same data (but for members' distances), so its notification is rendered and encoded once
/// rather than once a device. At most `capacity` are kept; the cache starts over when full.
final class RenderedNotifications: Sendable {
    private let notifications = Mutex<[String: WebPushSender.Notification]>([:])
    let capacity: Int

    init(capacity: Int = 1024) { self.capacity = capacity }

    func notification(template: TemplateName, locale: String, data text: String,
                      render: () throws -> WebPushSender.Notification) rethrows -> WebPushSender.Notification {
        let key = template.name + "\u{0}" + locale + "\u{0}" + text
        if let known = notifications.withLock({ $0[key] }) { return known }
        let made = try render()
        notifications.withLock { cache in
            if cache.count >= capacity { cache.removeAll(keepingCapacity: true) }
            cache[key] = made
        }
        return made
    }
}
