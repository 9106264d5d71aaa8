import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
import Synchronization

/// What device registration and the delivery worker share about Web Push.
public struct PushSettings: Sendable {
    public var hosts = WebPushHosts.publicServices
    /// The outbound policy and resolver endpoints are checked and reached with.
    public var network = OutboundNetwork()
    public var vapid = VAPIDKeys(secretKey: nil)
    /// The VAPID `sub` claim: how a push service reaches the operator (`mailto:` or `https:`).
    public var subject: String?

    public init() {}

    /// A Web Push endpoint as Roost will POST to it: at most 1,024 bytes, a subscriber's URL
    /// by the outbound policy (`https`, a host name, the default port), on an allowed push
    /// service (`ROOST_WEBPUSH_HOSTS`).
    func endpoint(_ text: String) throws(OutboundRefusal) -> OutboundURL {
        guard text.utf8.count <= 1024 else { throw OutboundRefusal("an endpoint is at most 1,024 bytes") }
        let url = try network.policy.url(text, from: .subscriber, schemes: ["https"])
        guard hosts.allows(url.hostText) else { throw OutboundRefusal("\(url.hostText) is not an allowed push service (ROOST_WEBPUSH_HOSTS)") }
        return url
    }

    /// A UnifiedPush endpoint: the push resource (RFC 8030) the member's distributor gave (an
    /// ntfy server, NextPush, a gateway), on whatever host that is, by the outbound policy alone
    /// (`https`, a host name, the default port, public addresses when connected to), at most
    /// 1,024 bytes.
    func unifiedPushEndpoint(_ text: String) throws(OutboundRefusal) -> OutboundURL {
        guard text.utf8.count <= 1024 else { throw OutboundRefusal("an endpoint is at most 1,024 bytes") }
        return try network.policy.url(text, from: .subscriber, schemes: ["https"])
    }
}

/// The push services a Web Push endpoint may be on (`ROOST_WEBPUSH_HOSTS`): host names, or
/// `*.example.com` for any name under one. A device registration names a URL Roost will POST
/// to, so only these are taken: nobody can aim Roost at an address inside its network.
public struct WebPushHosts: Sendable, Equatable {
    public let patterns: [String]

    /// The push services of the browsers people use: Chrome and Edge on Android and desktop
    /// (FCM), Firefox (Mozilla autopush), Safari on macOS and iOS 16.4+ (Apple), Windows (WNS).
    public static let publicServices = WebPushHosts(patterns: [
        "fcm.googleapis.com", "updates.push.services.mozilla.com", "*.push.apple.com", "*.notify.windows.com",
    ])

    public init(patterns: [String]) {
        self.patterns = patterns.map { $0.lowercased() }
    }

    public init(parsing text: String) throws {
        let list = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard !list.isEmpty, list.allSatisfy({ $0.range(of: #"^(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?$"#, options: .regularExpression) != nil }) else {
            throw ConfigurationError("ROOST_WEBPUSH_HOSTS takes host names such as fcm.googleapis.com,*.push.apple.com, not '\(text)'")
        }
        self.init(patterns: list)
    }

    public func allows(_ host: String) -> Bool {
        let host = host.lowercased()
        return patterns.contains { pattern in
            pattern.hasPrefix("*.") ? host.hasSuffix(pattern.dropFirst(1)) && host.count > pattern.count - 1 : host == pattern
        }
    }
}

/// The server's VAPID key pair (RFC 8292), made by the first node that needs it and kept in
/// the database; its private key sealed with AES-256-GCM under a key derived from
/// `ROOST_SECRET_KEY` when one is set. Loaded once per process.
public final class VAPIDKeys: Sendable {
    private let secret: [UInt8]?
    private let cached = Mutex<P256Key?>(nil)

    public init(secretKey: String?) {
        secret = secretKey.map { Digest.sha256(Array("roost vapid key\0\($0)".utf8)) }
    }

    public func key(_ pool: ConnectionPool) async throws -> P256Key {
        if let key = cached.withLock({ $0 }) { return key }
        let fresh = try P256Key.generate()
        let sealed = try secret.map { secret -> [UInt8] in
            let nonce = Secrets.randomBytes(12)
            return nonce + (try AESGCM.seal(fresh.privateKeyDER, key: secret, nonce: nonce))
        }
        let stored = try await pool.withConnection { connection in
            try VAPIDKeyStore().insertIfAbsent(StoredVAPIDKey(publicKey: fresh.publicPoint, privateKey: sealed ?? fresh.privateKeyDER, sealed: sealed != nil),
                                               on: connection)
        }
        let key = try open(stored)
        cached.withLock { $0 = key }
        return key
    }

    private func open(_ stored: StoredVAPIDKey) throws -> P256Key {
        guard stored.sealed else { return try P256Key(privateKeyDER: stored.privateKey) }
        guard let secret else { throw ConfigurationError("the VAPID key is sealed: set the ROOST_SECRET_KEY it was sealed with") }
        guard stored.privateKey.count > 28,
              let der = try AESGCM.open(Array(stored.privateKey.dropFirst(12)), key: secret, nonce: Array(stored.privateKey.prefix(12))) else {
            throw ConfigurationError("the VAPID key does not open with this ROOST_SECRET_KEY")
        }
        let key = try P256Key(privateKeyDER: der)
        guard key.publicPoint == stored.publicKey else { throw ConfigurationError("the stored VAPID key pair does not match") }
        return key
    }
}
