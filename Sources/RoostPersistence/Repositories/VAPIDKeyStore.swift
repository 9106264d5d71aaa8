import Foundation

/// The server's VAPID key pair as stored (sql/0022_delivery.sql): the public point, and the
/// private key's DER, sealed or not.
public struct StoredVAPIDKey: Sendable, Equatable {
    public let publicKey: [UInt8]
    public let privateKey: [UInt8]
    public let sealed: Bool

    public init(publicKey: [UInt8], privateKey: [UInt8], sealed: Bool) {
        self.publicKey = publicKey
        self.privateKey = privateKey
        self.sealed = sealed
    }
}

/// One key pair for every node: the first to start stores it, the others read it.
public struct VAPIDKeyStore: Sendable {
    public init() {}

    public func load(on connection: PostgresConnection) throws -> StoredVAPIDKey? {
        try connection.query("SELECT public_key, private_key, sealed FROM vapid_keys WHERE id = 1").first.map {
            StoredVAPIDKey(publicKey: Array(try $0.decode(Data.self, "public_key")), privateKey: Array(try $0.decode(Data.self, "private_key")),
                           sealed: try $0.decode(Bool.self, "sealed"))
        }
    }

    /// Stores `key` unless a node got there first; the key that is stored either way.
    public func insertIfAbsent(_ key: StoredVAPIDKey, on connection: PostgresConnection) throws -> StoredVAPIDKey {
        try connection.query("""
            INSERT INTO vapid_keys (id, public_key, private_key, sealed)
            VALUES (1, \(Data(key.publicKey)), \(Data(key.privateKey)), \(key.sealed)) ON CONFLICT (id) DO NOTHING
            """)
        return try load(on: connection) ?? key
    }
}
