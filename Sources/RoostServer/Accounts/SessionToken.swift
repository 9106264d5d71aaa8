import Foundation
import RoostProtocol

/// A session token: `rst_` and base64url of the tenant's 16-byte id followed by 32 random bytes.
///
/// The tenant travels in the token so a request can set `roost.tenant_id` before row-level
/// security lets it see the session row; that part is not secret and proves nothing. Only
/// SHA-256 of the whole token is stored, so a database leak reveals no usable token, and a
/// token whose tenant part was altered simply finds no session in that tenant.
public struct SessionToken: Sendable, Equatable {
    static let prefix = "rst_"

    public let tenant: UUID
    /// SHA-256 of the token's text: what the sessions table keys on.
    public let hash: [UInt8]

    /// A new token for `tenant`, and the text shown to the client once.
    public static func generate(tenant: UUID) -> (text: String, token: SessionToken) {
        let text = prefix + Secrets.base64URL(tenant.bytes + Secrets.randomBytes(32))
        return (text, SessionToken(tenant: tenant, hash: Digest.sha256(Array(text.utf8))))
    }

    /// Reads a bearer token; nil for anything not of this shape.
    public init?(_ text: String) {
        guard text.hasPrefix(Self.prefix), text.utf8.count == Self.prefix.utf8.count + 64,
              let bytes = Secrets.decodeBase64URL(String(text.dropFirst(Self.prefix.count))), bytes.count == 48 else {
            return nil
        }
        tenant = UUID(bytes: Array(bytes[0..<16]))
        hash = Digest.sha256(Array(text.utf8))
    }

    private init(tenant: UUID, hash: [UInt8]) {
        self.tenant = tenant
        self.hash = hash
    }
}

extension UUID {
    var bytes: [UInt8] {
        withUnsafeBytes(of: uuid) { Array($0) }
    }

    init(bytes: [UInt8]) {
        precondition(bytes.count == 16)
        self = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
