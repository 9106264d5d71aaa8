import Foundation
import RoostFanout
import RoostPersistence
import RoostProtocol
@testable import RoostHTTP
@testable import RoostServer
import RoostTestSupport
import Testing

/// A test server with the account and group routes over the real test database, two fresh
/// tenants (one open, one invite-only), and a client; given `adminToken`, the operator's routes too.
struct APIFixture {
    let test: TestServer
    let pool: ConnectionPool
    private let connection: APIClient
    /// The current connection (a new one after the server closed the last, e.g. after a 413).
    var client: TestClient { connection.client }
    let tenant: String
    let closedTenant: String

    /// The stream's hub and LISTEN connection (with `stream: true`).
    let hub: StreamHub?
    private let listener: FanoutListener?

    /// With `database`, on that database of the test cluster (already migrated) instead of the shared one.
    /// A cheap scrypt cost keeps the suite fast; the standard cost is asserted elsewhere.
    /// `limits` default to `.generous`: the suite registers hundreds of accounts from loopback;
    /// the throttle tests pass the limits they test.
    init(invitationLifetime: Int = 3600, stream: Bool = false, database: String? = nil, limits: AbuseLimits = .generous,
         proxies: TrustedProxies = .none, hasher: PasswordHasher = PasswordHasher(parameters: .init(logN: 10, r: 8, p: 1)),
         push: PushSettings = PushSettings(), network: NetworkLimits = NetworkLimits(), adminToken: String? = nil) throws {
        let setup = try database.map { try TestDatabase.connect(database: $0) } ?? TestDatabase.migratedConnection()
        let suffix = UUID().uuidString.prefix(8).lowercased()
        tenant = "acct-\(suffix)"
        closedTenant = "closed-\(suffix)"
        _ = try TenantStore().create(slug: tenant, name: "Oak Lane", registration: .open, on: setup)
        _ = try TenantStore().create(slug: closedTenant, name: "Gated Close", registration: .inviteOnly, on: setup)
        // A wait for a connection as long as an API answer may take (not the 5 s a server gets):
        // with every suite running at once on two cores, twenty transactions queued behind one
        // group's lock have been seen to need more than 5 s, and then more than 30 s.
        let pool = ConnectionPool(configuration: TestDatabase.configuration(database: database),
                                  options: .init(maxConnections: 4, acquireTimeout: .seconds(APIClient.defaultReceiveTimeoutSeconds)))
        self.pool = pool
        let routes = AccountRoutes(pool: pool, hasher: hasher,
                                   sessionLifetime: 3600, hashingThreads: 2, invitationLifetime: invitationLifetime, limits: limits,
                                   proxies: proxies, push: push)
        let hub = stream ? StreamHub.make(pool: pool, queueLimit: NetworkLimits().maxOutboundQueueBytes) : nil
        test = try TestServer(limits: network, extraRoutes: { builder in
            APIRoutes(accounts: routes, checkinMinimumSeconds: 1, hub: hub).add(to: &builder)
            if let adminToken {
                TenantRoutes.add(to: &builder, pool: pool, adminToken: adminToken)
                TenantAdminRoutes.add(to: &builder, pool: pool, adminToken: adminToken)
                FeedAdminRoutes.add(to: &builder, pool: pool, adminToken: adminToken, policy: OutboundPolicy(), minPollSeconds: 10)
            }
        })
        self.hub = hub
        if let hub {
            let listener = FanoutListener(configuration: TestDatabase.configuration(database: database), server: test.server, log: Log(level: .error))
            try hub.listen(to: listener)
            self.listener = listener
        } else {
            listener = nil
        }
        connection = try APIClient(port: test.port)
    }

    func call(_ method: String, _ path: String, _ body: [String: Any]? = nil, token: String? = nil,
              headers: [String: String] = [:]) async throws -> (Int, [String: Any]) {
        try await connection.call(method, path, body, token: token, headers: headers)
    }

    /// Another connection to the fixture's server, for a second caller working concurrently.
    typealias Client = APIClient

    /// Runs `body` in a transaction of the fixture's open tenant (test setup and inspection).
    @discardableResult
    func inTenant<Value: Sendable>(_ body: @escaping @Sendable (UUID, PostgresConnection) throws -> Value) async throws -> Value {
        let slug = tenant
        return try await pool.withConnection { connection in
            let tenant = try TenantStore().find(slug: slug, on: connection)!.id
            return try connection.withTenantTransaction(tenant) { try body(tenant, $0) }
        }
    }

    /// Test setup only: puts a user in a group directly (invitations are how it happens for real).
    func addMember(_ user: String, to group: String, role: String) async throws {
        try await inTenant { tenant, connection in
            try connection.query("""
                INSERT INTO memberships (tenant_id, group_id, user_id, role)
                VALUES (\(tenant), \(UUID(uuidString: group)!), \(UUID(uuidString: user)!), \(role))
                """)
        }
    }

    /// Stops the server (and the LISTEN connection) and closes the pool.
    func stop() async {
        listener?.stop()
        await test.stop()
        pool.close()
    }

    /// A registered user: their session token and id.
    struct Person {
        let token: String
        let id: String
    }

    /// Registers a user of the open tenant (201 expected) with these fields over the defaults.
    func person(_ fields: [String: Any]) async throws -> Person {
        let (status, body) = try await register(fields)
        #expect(status == 201, "register \(fields.keys.sorted()): \(body)")
        return Person(token: try #require(body["token"] as? String), id: try #require((body["user"] as? [String: Any])?["id"] as? String))
    }

    /// Registers a user by email, named after the address's local part.
    func person(email: String) async throws -> Person {
        try await person(["email": email, "display_name": String(email.prefix { $0 != "@" })])
    }

    /// The password of every person the fixture registers.
    static let password = "a long enough password"

    func register(_ fields: [String: Any]) async throws -> (Int, [String: Any]) {
        var body: [String: Any] = ["tenant": tenant, "password": Self.password, "display_name": "Anna"]
        body.merge(fields) { $1 }
        return try await call("POST", "/v1/auth/register", body)
    }

}

extension Dictionary where Key == String, Value == Any {
    /// The `error.code` of an answer in the API's error shape.
    var errorCode: String? { (self["error"] as? [String: Any])?["code"] as? String }
}
