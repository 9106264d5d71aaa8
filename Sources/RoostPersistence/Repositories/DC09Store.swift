import Foundation

/// Bridges' SIA DC-09 identities (sql/0036_dc09.sql): giving one to a bridge, finding the
/// bridge a panel's frame names before its tenant is known, and the sequence numbers taken
/// (a resent message is acknowledged again and applied once).
public struct DC09Store: Sendable {
    public init() {}

    /// The identity is another bridge's, in this tenant or another.
    public struct Taken: Error {}

    /// Gives a live bridge its identity and key (nil: plain frames), in a transaction of its
    /// tenant. Throws `Taken` when any bridge of the deployment holds the identity.
    public func assign(_ identity: DC09Identity, key: [UInt8]?, tenant: UUID, bridge: UUID, on connection: PostgresConnection) throws {
        do {
            try connection.withSavepoint { connection in
                try connection.query("""
                    INSERT INTO dc09_identities (receiver, line, account, tenant_id, bridge_id)
                    VALUES (\(identity.receiver), \(identity.line), \(identity.account), \(tenant), \(bridge))
                    """)
            }
        } catch let error as DatabaseError where error.code == .uniqueViolation {
            throw Taken()
        }
        try connection.query("""
            UPDATE bridges SET dc09_receiver = \(identity.receiver), dc09_line = \(identity.line), dc09_account = \(identity.account),
                               dc09_key = \(key.map { Data($0) }), dc09_hold_up_duress = \(identity.holdUpIsDuress)
            WHERE id = \(bridge)
            """)
    }

    /// Frees a revoked bridge's identity for another.
    public func release(bridge: UUID, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM dc09_identities WHERE bridge_id = \(bridge)")
    }

    /// The tenant and bridge an identity belongs to, across tenants (outside any tenant's
    /// transaction: the index holds identifiers only).
    public func owner(receiver: String, line: String, account: String, on connection: PostgresConnection) throws -> (tenant: UUID, bridge: UUID)? {
        try connection.query("""
            SELECT tenant_id, bridge_id FROM dc09_identities WHERE receiver = \(receiver) AND line = \(line) AND account = \(account)
            """).first.map { (try $0.decode(UUID.self, "tenant_id"), try $0.decode(UUID.self, "bridge_id")) }
    }

    /// The live bridge's key (nil: plain frames), in a transaction of its tenant; `.none` when
    /// the bridge is revoked or gone.
    public func key(bridge: UUID, on connection: PostgresConnection) throws -> [UInt8]?? {
        guard let row = try connection.query("""
            SELECT dc09_key FROM bridges WHERE id = \(bridge) AND revoked_at IS NULL AND dc09_account IS NOT NULL
            """).first else { return .none }
        return .some(try row.decode(Data?.self, "dc09_key").map { Array($0) })
    }

    /// Records that the bridge's message `sequence` was taken; false when it was taken within
    /// the last `window` seconds (a resend). An older record is a new message under a number
    /// that has come round again.
    public func take(tenant: UUID, bridge: UUID, sequence: String, window: Int, on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            INSERT INTO dc09_seen (tenant_id, bridge_id, sequence) VALUES (\(tenant), \(bridge), \(sequence))
            ON CONFLICT (tenant_id, bridge_id, sequence) DO UPDATE SET seen_at = now()
            WHERE dc09_seen.seen_at < now() - \(window) * interval '1 second'
            RETURNING sequence
            """).affectedRows == 1
    }
}
