import Foundation
import RoostProtocol

/// A tenant-bound secret token: a prefix naming its kind (`rst_` session, `riv_` invitation,
/// `rbk_` bridge key, `rbh_` a bridge's hook URL, `rec_` and `rem_` escalation and emergency contacts' links, `rcs_` a check-in's status page, `rcu_` an address change's undo link),
/// then base64url of the tenant's 16-byte id followed by 32 random bytes.
///
/// The tenant travels in the token so a request can set `roost.tenant_id` before row-level
/// security lets it see the token's row; that part is not secret and proves nothing. Only
/// SHA-256 of the whole token is stored, so a database leak reveals no usable token, and a
/// token whose tenant part was altered simply finds nothing in that tenant.
public struct TenantToken: Sendable, Equatable {
    public static let session = "rst_"
    public static let invitation = "riv_"
    public static let bridge = "rbk_"
    /// The secret of a bridge's hook URL (`/v1/bridge/hooks/{secret}`).
    public static let bridgeHook = "rbh_"
    /// An escalation contact's confirmation link.
    public static let escalationContact = "rec_"
    /// An emergency contact's confirmation link.
    public static let emergencyContact = "rem_"
    /// A told emergency contact's check-in status page.
    public static let checkinStatus = "rcs_"
    /// The link that undoes a change of address, sent to the old address.
    public static let contactUndo = "rcu_"

    public let tenant: UUID
    /// SHA-256 of the token's text: what the sessions table keys on.
    public let hash: [UInt8]

    /// A new token for `tenant`, and the text shown (or sent) once.
    public static func generate(_ prefix: String = session, tenant: UUID) -> (text: String, token: TenantToken) {
        let text = prefix + Secrets.base64URL(tenant.bytes + Secrets.randomBytes(32))
        return (text, TenantToken(tenant: tenant, hash: Digest.sha256(Array(text.utf8))))
    }

    /// Reads a token of the given kind; nil for anything not of that shape.
    public init?(_ text: String, prefix: String = session) {
        guard text.hasPrefix(prefix), text.utf8.count == prefix.utf8.count + 64,
              let bytes = Secrets.decodeBase64URL(String(text.dropFirst(prefix.count))), bytes.count == 48 else {
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
