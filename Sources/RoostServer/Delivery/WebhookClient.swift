import Foundation
import RoostProtocol

/// The delivery webhook (API.md "Outbound delivery"): the outbox row as JSON, signed like
/// bridge requests when a secret is set; any 2xx is delivered. Posted over its origin's kept
/// connections (`OriginLink`); a redirect is an answer like any other, never followed.
struct WebhookClient {
    let url: OutboundURL
    let secret: String?

    /// POSTs `body`; `then` hears the response, or the transport's failure.
    func post(_ body: [UInt8], over poster: any HTTPPoster, now: Date = Date(), then: @escaping HTTPAnswer) {
        var headers = [("Content-Type", "application/json")]
        if let secret {
            // As for bridges (API.md): HMAC-SHA256 of "timestamp.body".
            let timestamp = String(Int(now.timeIntervalSince1970))
            let signature = Digest.hex(Secrets.hmacSHA256(key: Array(secret.utf8), message: Array((timestamp + ".").utf8) + body))
            headers += [("X-Roost-Timestamp", timestamp), ("X-Roost-Signature", "sha256=\(signature)")]
        }
        poster.post(url, headers: headers, body: body, then: then)
    }
}
